// Streams and events in C++: elapsed times on the simulated timeline, cross-stream waits,
// queries, synchronization with timeouts, priorities and forced destruction.
#include <cmath>
#include <cstring>
#include <vector>

#include "check.h"

int main() {
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream copyStream = nullptr, computeStream = nullptr;
    CHECK_ACL(aclrtCreateStream(&copyStream));
    CHECK_ACL(aclrtCreateStreamWithConfig(&computeStream, 3, ACL_STREAM_FAST_LAUNCH));
    uint32_t priority = 0;
    CHECK_ACL(aclrtStreamGetPriority(computeStream, &priority));
    EXPECT_TRUE(priority == 3);

    const size_t bytes = size_t{256} << 20;  // 256 MiB
    void* device = nullptr;
    void* pinned = nullptr;
    CHECK_ACL(aclrtMalloc(&device, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMallocHost(&pinned, bytes));

    aclrtEvent start = nullptr, copied = nullptr, done = nullptr;
    CHECK_ACL(aclrtCreateEvent(&start));
    CHECK_ACL(aclrtCreateEventWithFlag(&copied, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    CHECK_ACL(aclrtCreateEvent(&done));

    // An H2D copy of 256 MiB from pinned memory: a PCIe transfer of some milliseconds.
    CHECK_ACL(aclrtRecordEvent(start, copyStream));
    CHECK_ACL(aclrtMemcpyAsync(device, bytes, pinned, bytes, ACL_MEMCPY_HOST_TO_DEVICE, copyStream));
    CHECK_ACL(aclrtRecordEvent(copied, copyStream));
    // The asynchronous copy is still running on the simulated chip.
    aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    CHECK_ACL(aclrtQueryEventStatus(copied, &status));
    EXPECT_TRUE(status == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    aclrtStreamStatus streamStatus = ACL_STREAM_STATUS_COMPLETE;
    CHECK_ACL(aclrtStreamQuery(copyStream, &streamStatus));
    EXPECT_TRUE(streamStatus == ACL_STREAM_STATUS_NOT_READY);

    // The compute stream waits for the copy, then memsets it: it ends after the copy.
    CHECK_ACL(aclrtStreamWaitEvent(computeStream, copied));
    CHECK_ACL(aclrtMemsetAsync(device, bytes, 0, bytes, computeStream));
    CHECK_ACL(aclrtRecordEvent(done, computeStream));

    // A 1 ms timeout is shorter than the queued work: the real call times out, so does this one.
    EXPECT_CODE(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, aclrtSynchronizeStreamWithTimeout(computeStream, 1));
    CHECK_ACL(aclrtSynchronizeEvent(done));
    CHECK_ACL(aclrtQueryEventStatus(copied, &status));
    EXPECT_TRUE(status == ACL_EVENT_RECORDED_STATUS_COMPLETE);

    float copyMs = 0, totalMs = 0;
    CHECK_ACL(aclrtEventElapsedTime(&copyMs, start, copied));
    CHECK_ACL(aclrtEventElapsedTime(&totalMs, start, done));
    printf("256 MiB H2D copy: %.3f ms, copy + memset: %.3f ms\n", copyMs, totalMs);
    // PCIe 4.0 x16 moves 256 MiB in roughly 5-30 ms; the memset (HBM) adds a little.
    EXPECT_TRUE(copyMs > 2.0f && copyMs < 60.0f);
    EXPECT_TRUE(totalMs > copyMs);

    // Timing is deterministic: a second identical copy takes the same simulated time.
    aclrtEvent again = nullptr, againEnd = nullptr;
    CHECK_ACL(aclrtCreateEvent(&again));
    CHECK_ACL(aclrtCreateEvent(&againEnd));
    CHECK_ACL(aclrtRecordEvent(again, copyStream));
    CHECK_ACL(aclrtMemcpyAsync(device, bytes, pinned, bytes, ACL_MEMCPY_HOST_TO_DEVICE, copyStream));
    CHECK_ACL(aclrtRecordEvent(againEnd, copyStream));
    CHECK_ACL(aclrtSynchronizeStream(copyStream));
    float againMs = 0;
    CHECK_ACL(aclrtEventElapsedTime(&againMs, again, againEnd));
    EXPECT_TRUE(std::fabs(againMs - copyMs) < 0.01f);

    // Pageable memory is staged: slower than pinned memory.
    std::vector<unsigned char> pageable(bytes, 3);
    CHECK_ACL(aclrtRecordEvent(again, copyStream));
    CHECK_ACL(aclrtMemcpyAsync(device, bytes, pageable.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, copyStream));
    CHECK_ACL(aclrtRecordEvent(againEnd, copyStream));
    CHECK_ACL(aclrtSynchronizeStream(copyStream));
    float pageableMs = 0;
    CHECK_ACL(aclrtEventElapsedTime(&pageableMs, again, againEnd));
    EXPECT_TRUE(pageableMs > copyMs);
    unsigned char probe = 0;
    CHECK_ACL(aclrtMemcpy(&probe, 1, static_cast<char*>(device) + bytes - 1, 1, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT_TRUE(probe == 3);

    // A reset event is no longer recorded.
    CHECK_ACL(aclrtResetEvent(copied, copyStream));
    EXPECT_CODE(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, aclrtEventElapsedTime(&copyMs, start, copied));

    // Forced destruction does not wait for the stream's work.
    CHECK_ACL(aclrtMemsetAsync(device, bytes, 0, bytes, computeStream));
    CHECK_ACL(aclrtDestroyStreamForce(computeStream));
    CHECK_ACL(aclrtDestroyStream(copyStream));
    for (aclrtEvent event : {start, copied, done, again, againEnd}) CHECK_ACL(aclrtDestroyEvent(event));
    CHECK_ACL(aclrtSynchronizeDevice());
    CHECK_ACL(aclrtFree(device));
    CHECK_ACL(aclrtFreeHost(pinned));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("streams_events: PASS\n");
    return 0;
}
