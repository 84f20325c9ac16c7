#include <gtest/gtest.h>

#include "runtime/DeviceRecovery.h"

using namespace npusim::runtime;

TEST(DeviceRecoveryTest, ActiveOnlyWhileTheCheckIsOnOrADeviceIsStopped) {
  EXPECT_FALSE(DeviceRecovery::active());
  DeviceRecovery::setUnsafeDataCheck(true);
  EXPECT_TRUE(DeviceRecovery::active() && DeviceRecovery::unsafeDataCheck());
  DeviceRecovery::setUnsafeDataCheck(false);
  EXPECT_FALSE(DeviceRecovery::active());

  DeviceRecovery::stop(3);
  EXPECT_TRUE(DeviceRecovery::active());
  EXPECT_TRUE(DeviceRecovery::stopped(3));
  EXPECT_FALSE(DeviceRecovery::stopped(2));
  EXPECT_FALSE(DeviceRecovery::unsafeDataCheck());
  DeviceRecovery::restart(3);
  EXPECT_FALSE(DeviceRecovery::stopped(3));
  EXPECT_FALSE(DeviceRecovery::active());

  // Out-of-range devices are never stopped and never set the state.
  DeviceRecovery::stop(-1);
  DeviceRecovery::stop(200);
  EXPECT_FALSE(DeviceRecovery::active());
}
