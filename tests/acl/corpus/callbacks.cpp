// Host callbacks: a reporting thread subscribed to a stream runs the callbacks launched on it.
#include <atomic>
#include <pthread.h>
#include <thread>

#include "check.h"

namespace {

std::atomic<bool> stopReporting{false};
std::atomic<int> callbacksRun{0};
int blockingValue = 0;

void countCallback(void* userData) {
    callbacksRun.fetch_add(1);
    *static_cast<int*>(userData) += 1;
}

void blockingCallback(void* userData) { blockingValue = *static_cast<int*>(userData) * 10; }

}  // namespace

int main() {
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtGetCurrentContext(&context));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));

    // Without a subscriber a callback cannot be launched.
    int counter = 0;
    EXPECT_CODE(ACL_ERROR_STREAM_NOT_SUBSCRIBE, aclrtLaunchCallback(countCallback, &counter, ACL_CALLBACK_NO_BLOCK, stream));
    // A thread that subscribed nothing cannot process reports.
    EXPECT_CODE(ACL_ERROR_THREAD_NOT_SUBSCRIBE, aclrtProcessReport(10));

    std::atomic<uint64_t> reporterId{0};
    std::atomic<bool> subscribed{false};
    std::thread reporter([&] {
        CHECK_ACL(aclrtSetCurrentContext(context));
        reporterId.store(static_cast<uint64_t>(pthread_self()));
        while (!subscribed.load()) std::this_thread::yield();
        while (!stopReporting.load()) {
            aclError code = aclrtProcessReport(20);
            if (code != ACL_SUCCESS && code != ACL_ERROR_WAIT_CALLBACK_TIMEOUT) {
                fprintf(stderr, "aclrtProcessReport returned %d\n", code);
                exit(1);
            }
        }
    });
    while (reporterId.load() == 0) std::this_thread::yield();
    CHECK_ACL(aclrtSubscribeReport(reporterId.load(), stream));
    EXPECT_CODE(ACL_ERROR_REPEAT_SUBSCRIBE, aclrtSubscribeReport(reporterId.load(), stream));
    subscribed.store(true);

    for (int i = 0; i < 5; ++i) CHECK_ACL(aclrtLaunchCallback(countCallback, &counter, ACL_CALLBACK_NO_BLOCK, stream));
    // A blocking callback has run when the launch returns (its effects precede later work).
    int input = 7;
    CHECK_ACL(aclrtLaunchCallback(blockingCallback, &input, ACL_CALLBACK_BLOCK, stream));
    EXPECT_TRUE(blockingValue == 70);
    CHECK_ACL(aclrtSynchronizeStream(stream));
    while (callbacksRun.load() < 5) std::this_thread::yield();
    EXPECT_TRUE(counter == 5);

    stopReporting.store(true);
    reporter.join();
    CHECK_ACL(aclrtUnSubscribeReport(reporterId.load(), stream));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("callbacks: PASS\n");
    return 0;
}
