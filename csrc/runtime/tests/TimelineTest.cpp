#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/Error.h"
#include "runtime/Timeline.h"

using namespace npusim::runtime;

TEST(Timeline, TasksQueueOnTheirStreamAndOverlapTheHost) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  host.advance(10);  // dispatch
  EXPECT_EQ(timeline.submit(0, 100), 110u);
  host.advance(10);
  EXPECT_EQ(timeline.submit(0, 100), 210u);  // waits for the stream, not the host
  EXPECT_EQ(host.now(), 20u);                // the host ran ahead
  EXPECT_FALSE(timeline.queryStream(0));
  timeline.synchronizeStream(0);
  EXPECT_EQ(host.now(), 210u);
  EXPECT_TRUE(timeline.queryStream(0));
  EXPECT_EQ(timeline.busyNs(), 200u);
}

TEST(Timeline, IdleStreamStartsWhenTheHostIssues) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  timeline.submit(0, 50);
  host.advance(1000);
  EXPECT_EQ(timeline.submit(0, 50), 1050u);
}

TEST(Timeline, StreamsOverlapEachOther) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  const StreamId side = timeline.streamFromPool(false);
  timeline.submit(0, 100);
  timeline.submit(side, 100);
  EXPECT_EQ(timeline.deviceClock(), 100u);
  timeline.synchronize();
  EXPECT_EQ(host.now(), 100u);
}

TEST(Timeline, EventsOrderStreams) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  const StreamId side = timeline.streamFromPool(false);
  timeline.submit(0, 3'000);
  Event produced;
  // Recording takes the host 1 us (kEventRecordNs); the kernel still runs then.
  timeline.recordEvent(produced, 0, true);
  EXPECT_EQ(produced.time, 3'000u);
  timeline.streamWaitEvent(side, produced);
  EXPECT_EQ(timeline.submit(side, 10), 3'010u);
  EXPECT_FALSE(timeline.queryEvent(produced));
  timeline.synchronizeEvent(produced);
  EXPECT_EQ(host.now(), 3'000u);
  EXPECT_TRUE(timeline.queryEvent(produced));
}

TEST(Timeline, ElapsedTimeIsSimulatedTime) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  Event start, end;
  timeline.recordEvent(start, 0, true);
  timeline.submit(0, 2'500'000);  // 2.5 ms kernel
  timeline.recordEvent(end, 0, true);
  // The kernel starts once the host has issued it, after recording `start`.
  EXPECT_DOUBLE_EQ(elapsedTimeMs(start, end), 2.5);
}

TEST(Timeline, BackToBackTimingEventsAreApart) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  Event start, end;
  timeline.recordEvent(start, 0, true);
  timeline.recordEvent(end, 0, true);
  EXPECT_GT(elapsedTimeMs(start, end), 0.0);
}

TEST(Timeline, ElapsedTimeNeedsRecordedTimingEvents) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  Event start, end, untimed;
  timeline.recordEvent(start, 0, true);
  EXPECT_THROW(elapsedTimeMs(start, end), RuntimeError);
  timeline.recordEvent(untimed, 0, false);
  EXPECT_THROW(elapsedTimeMs(start, untimed), RuntimeError);
}

TEST(Timeline, WaitingOnAnUnrecordedEventIsANoOp) {
  HostClock host;
  DeviceTimeline timeline(0, host);
  Event never;
  timeline.streamWaitEvent(0, never);
  EXPECT_TRUE(timeline.queryEvent(never));
  EXPECT_EQ(timeline.submit(0, 5), 5u);
}

TEST(Timeline, PoolStreamsRoundRobinWithPriorities) {
  HostClock host;
  DeviceTimeline timeline(0, host, 4);
  std::vector<StreamId> normal;
  for (int i = 0; i < 5; ++i) normal.push_back(timeline.streamFromPool(false));
  EXPECT_EQ(normal[0], normal[4]);
  EXPECT_NE(normal[0], normal[1]);
  EXPECT_EQ(timeline.streamPriority(normal[0]), DeviceTimeline::kNormalPriority);
  const StreamId high = timeline.streamFromPool(true);
  EXPECT_EQ(timeline.streamPriority(high), DeviceTimeline::kHighPriority);
  EXPECT_EQ(timeline.streamPriority(0), DeviceTimeline::kNormalPriority);
}

TEST(Timeline, BadStreamIsAnErrorNotACrash) {
  HostClock host;
  DeviceTimeline timeline(0, host, 2);
  EXPECT_THROW(timeline.submit(99999, 1), RuntimeError);  // type 3124: no such stream
  EXPECT_THROW(timeline.submit(-1, 1), RuntimeError);
  EXPECT_THROW(timeline.streamPriority(5), RuntimeError);
  EXPECT_THROW(DeviceTimeline(0, host, 0), RuntimeError);
}

TEST(TimelineConcurrency, ManyThreadsSubmitAndSynchronize) {
  HostClock host;
  DeviceTimeline timeline(0, host, 4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const StreamId stream = timeline.streamFromPool(t % 2 == 0);
      for (int i = 0; i < 1000; ++i) {
        host.advance(1);
        timeline.submit(stream, 10);
        if (i % 100 == 0) timeline.synchronizeStream(stream);
        Event e;
        timeline.recordEvent(e, stream, true);
        timeline.queryEvent(e);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(timeline.busyNs(), 4u * 1000 * 10);
  timeline.synchronize();
  EXPECT_GE(host.now(), timeline.deviceClock());
}

TEST(Timeline, StreamIdsFollowTorchNpuEncoding) {
  HostClock host;
  DeviceTimeline timeline(0, host);  // 32 streams per pool: 5 index bits
  EXPECT_EQ(timeline.streamFromPool(false) >> 5, 3);  // NORMAL
  EXPECT_EQ(timeline.streamFromPool(true) >> 5, 4);   // HIGH
  const StreamId sync = timeline.syncLaunchStream();
  EXPECT_EQ(sync >> 5, 2);  // SYNCLAUNCH
  EXPECT_TRUE(timeline.isSyncLaunch(sync));
  EXPECT_FALSE(timeline.isSyncLaunch(0));
  for (int i = 0; i < 3; ++i) timeline.syncLaunchStream();
  EXPECT_EQ(timeline.syncLaunchStream(), sync);  // a pool of four, round-robin
  EXPECT_TRUE(timeline.isValidStream(0));
  EXPECT_FALSE(timeline.isValidStream(1));          // default stream, index 1
  EXPECT_FALSE(timeline.isValidStream(sync + 4));   // sync-launch index 4
  EXPECT_FALSE(timeline.isValidStream(99999));      // unknown type
  EXPECT_FALSE(timeline.isValidStream(-1));
  DeviceTimeline eight(1, host, 8);  // STREAMS_PER_DEVICE=8: 3 index bits
  EXPECT_EQ(eight.streamFromPool(false), (3 << 3) | 0);
  EXPECT_TRUE(eight.isValidStream((4 << 3) | 7));
  EXPECT_FALSE(eight.isValidStream(5 << 3));  // no type 5
}
