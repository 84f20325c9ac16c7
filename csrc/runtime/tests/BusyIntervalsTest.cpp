#include <gtest/gtest.h>

#include "runtime/BusyIntervals.h"
#include "runtime/Timeline.h"

using namespace npusim::runtime;

TEST(BusyIntervals, NothingIsRecordedUntilEnabled) {
  clearBusyIntervals();
  enableBusyIntervals(false);
  HostClock host;
  DeviceTimeline timeline(/*device=*/6, host);
  timeline.submit(0, 100);
  EXPECT_TRUE(busyIntervals(6, 0).empty());
}

TEST(BusyIntervals, TimelineRecordsMergedTaskIntervalsPerStream) {
  clearBusyIntervals();
  enableBusyIntervals(true);
  HostClock host;
  DeviceTimeline timeline(/*device=*/7, host);
  timeline.submit(0, 100);  // [0, 100)
  timeline.submit(0, 50);   // touches: merged into [0, 150)
  host.advance(400);
  timeline.submit(0, 10);   // host-bound gap: [400, 410)
  const StreamId side = timeline.streamFromPool(true);
  timeline.submit(side, 300);  // [400, 700)
  const auto compute = busyIntervals(7, 0);
  ASSERT_EQ(compute.size(), 2u);
  EXPECT_EQ(compute[0].begin, 0u);
  EXPECT_EQ(compute[0].end, 150u);
  EXPECT_EQ(compute[1].begin, 400u);
  EXPECT_EQ(compute[1].end, 410u);
  EXPECT_EQ(streamsWithIntervals(7).size(), 2u);
  EXPECT_EQ(overlapLength(compute, busyIntervals(7, side)), 10u);
  clearBusyIntervals();
  EXPECT_TRUE(busyIntervals(7, 0).empty());
  EXPECT_FALSE(busyIntervalsTruncated());
  enableBusyIntervals(false);
}

TEST(BusyIntervals, OverlapAndUnionOfSortedLists) {
  const std::vector<BusyInterval> a{{0, 10}, {20, 30}, {40, 50}};
  const std::vector<BusyInterval> b{{5, 25}, {45, 100}};
  EXPECT_EQ(overlapLength(a, b), 5u + 5u + 5u);
  EXPECT_EQ(overlapLength(a, {}), 0u);
  const auto merged = unionOf({a, b});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].begin, 0u);
  EXPECT_EQ(merged[0].end, 30u);
  EXPECT_EQ(merged[1].begin, 40u);
  EXPECT_EQ(merged[1].end, 100u);
}
