// AscendCL devices and contexts over npusim's simulated devices.
#include <map>
#include <mutex>
#include <set>

#include "acl/acl.h"
#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"
#include "acl/runtime/ModelCapture.h"
#include "runtime/Runtime.h"

namespace {

using npusim::acl::AclFailure;
using npusim::acl::callAcl;
using npusim::acl::requireNotNull;

npusim::runtime::Runtime& rt() { return npusim::runtime::Runtime::instance(); }

// Which peers each device may access (aclrtDeviceEnablePeerAccess), for the disable call.
std::mutex peerMutex;
std::set<std::pair<int, int>> enabledPeers;

// A timeout argument in milliseconds: -1 waits forever, a positive value that long.
void checkTimeout(int32_t timeout) {
  if (timeout != -1 && timeout <= 0) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM,
                     "timeout must be -1 (wait forever) or a positive number of milliseconds, got " +
                         std::to_string(timeout));
  }
}

}  // namespace

extern "C" {

aclError aclrtSetDevice(int32_t deviceId) {
  return callAcl("aclrtSetDevice", [&] { npusim::acl::setDevice(deviceId); });
}

aclError aclrtResetDevice(int32_t deviceId) {
  return callAcl("aclrtResetDevice", [&] { npusim::acl::resetDevice(deviceId, false); });
}

aclError aclrtResetDeviceForce(int32_t deviceId) {
  return callAcl("aclrtResetDeviceForce", [&] { npusim::acl::resetDevice(deviceId, true); });
}

aclError aclrtGetDevice(int32_t* deviceId) {
  return callAcl("aclrtGetDevice", [&] {
    requireNotNull(deviceId, "deviceId");
    *deviceId = npusim::acl::currentDeviceOrThrow();
  });
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  return callAcl("aclrtGetRunMode", [&] {
    requireNotNull(runMode, "runMode");
    *runMode = ACL_HOST;  // the program runs on the host, the NPU is a PCIe device (EP mode)
  });
}

aclError aclrtSynchronizeDevice(void) {
  return callAcl("aclrtSynchronizeDevice", [&] {
    npusim::acl::requireUnsafeCallAllowed("aclrtSynchronizeDevice");
    rt().synchronizeDevice(npusim::acl::currentDeviceOrThrow());
  });
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
  return callAcl("aclrtSynchronizeDeviceWithTimeout", [&] {
    checkTimeout(timeout);
    npusim::acl::requireUnsafeCallAllowed("aclrtSynchronizeDeviceWithTimeout");
    const int device = npusim::acl::currentDeviceOrThrow();
    npusim::runtime::DeviceTimeline& timeline = rt().timeline(device);
    const uint64_t now = timeline.hostClock().now();
    const uint64_t limit = timeout < 0 ? UINT64_MAX : now + static_cast<uint64_t>(timeout) * 1'000'000;
    if (timeline.deviceClock() > limit) {
      // The simulated work would outlast the timeout: the host waited that long and gave up.
      timeline.hostClock().waitUntil(limit);
      throw AclFailure(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                       "the device's work did not complete within " + std::to_string(timeout) + " ms");
    }
    rt().synchronizeDevice(device);
  });
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  return callAcl("aclrtGetDeviceCount", [&] {
    requireNotNull(count, "count");
    *count = static_cast<uint32_t>(npusim::runtime::Runtime::visibleDeviceCount());
  });
}

const char* aclrtGetSocName(void) {
  try {
    return rt().chip().socName.c_str();
  } catch (...) {
    return nullptr;
  }
}

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t* value) {
  return callAcl("aclrtGetDeviceInfo", [&] {
    requireNotNull(value, "value");
    const npusim::runtime::DeviceProperties p = rt().properties(static_cast<int>(deviceId));
    switch (npusim::acl::enumValue(attr)) {
      case ACL_DEV_ATTR_AICPU_CORE_NUM: *value = rt().chip().aiCpuCores; break;
      case ACL_DEV_ATTR_AICORE_CORE_NUM:
      case ACL_DEV_ATTR_CUBE_CORE_NUM: *value = p.cubeCoreNum; break;
      case ACL_DEV_ATTR_VECTOR_CORE_NUM: *value = p.vectorCoreNum; break;
      case ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: *value = static_cast<int64_t>(p.totalMemory); break;
      case ACL_DEV_ATTR_L2_CACHE_SIZE: *value = static_cast<int64_t>(p.l2CacheSize); break;
      case ACL_DEV_ATTR_PHY_CHIP_ID: *value = p.physicalId; break;
      default:
        throw AclFailure(ACL_ERROR_FEATURE_UNSUPPORTED,
                         "device attribute " + std::to_string(npusim::acl::enumValue(attr)) + " is not simulated");
    }
  });
}

aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t* value) {
  return callAcl("aclGetDeviceCapability", [&] {
    requireNotNull(value, "value");
    const npusim::runtime::DeviceProperties p = rt().properties(static_cast<int>(deviceId));
    switch (npusim::acl::enumValue(deviceInfo)) {
      case ACL_DEVICE_INFO_AI_CORE_NUM: *value = p.cubeCoreNum; break;
      case ACL_DEVICE_INFO_VECTOR_CORE_NUM: *value = p.vectorCoreNum; break;
      case ACL_DEVICE_INFO_L2_SIZE: *value = static_cast<int64_t>(p.l2CacheSize); break;
      default:
        throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown device information " + std::to_string(npusim::acl::enumValue(deviceInfo)));
    }
  });
}

aclError aclrtDeviceCanAccessPeer(int32_t* canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
  return callAcl("aclrtDeviceCanAccessPeer", [&] {
    requireNotNull(canAccessPeer, "canAccessPeer");
    rt().registry().checkDevice(deviceId, "aclrtDeviceCanAccessPeer");
    rt().registry().checkDevice(peerDeviceId, "aclrtDeviceCanAccessPeer");
    if (deviceId == peerDeviceId) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "deviceId and peerDeviceId must be different devices");
    }
    *canAccessPeer = 1;  // the chips of one simulated server are fully connected (HCCS)
  });
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
  return callAcl("aclrtDeviceEnablePeerAccess", [&] {
    if (flags != 0) throw AclFailure(ACL_ERROR_INVALID_PARAM, "flags must be 0");
    const int device = npusim::acl::currentDeviceOrThrow();
    rt().registry().checkDevice(peerDeviceId, "aclrtDeviceEnablePeerAccess");
    if (device == peerDeviceId) throw AclFailure(ACL_ERROR_INVALID_PARAM, "a device cannot be its own peer");
    std::lock_guard<std::mutex> lock(peerMutex);
    enabledPeers.emplace(device, peerDeviceId);
  });
}

aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
  return callAcl("aclrtDeviceDisablePeerAccess", [&] {
    const int device = npusim::acl::currentDeviceOrThrow();
    rt().registry().checkDevice(peerDeviceId, "aclrtDeviceDisablePeerAccess");
    std::lock_guard<std::mutex> lock(peerMutex);
    if (enabledPeers.erase({device, peerDeviceId}) == 0) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM,
                       "peer access to device " + std::to_string(peerDeviceId) + " is not enabled");
    }
  });
}

// Simulated work never hangs, so an operator timeout has nothing to cut short; the values are
// accepted as the real calls accept them.
aclError aclrtSetOpWaitTimeout(uint32_t) { return ACL_SUCCESS; }
aclError aclrtSetOpExecuteTimeOut(uint32_t) { return ACL_SUCCESS; }

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  return callAcl("aclrtCreateContext", [&] {
    requireNotNull(context, "context");
    *context = npusim::acl::createContext(deviceId);
  });
}

aclError aclrtDestroyContext(aclrtContext context) {
  return callAcl("aclrtDestroyContext", [&] { npusim::acl::destroyContext(context); });
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  return callAcl("aclrtSetCurrentContext", [&] { npusim::acl::setCurrentContext(context); });
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  return callAcl("aclrtGetCurrentContext", [&] {
    requireNotNull(context, "context");
    *context = npusim::acl::currentContextHandle();
  });
}

aclError aclrtCtxGetCurrentDefaultStream(aclrtStream* stream) {
  return callAcl("aclrtCtxGetCurrentDefaultStream", [&] {
    requireNotNull(stream, "stream");
    npusim::acl::currentContext();  // a context must be current
    *stream = nullptr;              // the null stream is the current context's default stream
  });
}

}  // extern "C"
