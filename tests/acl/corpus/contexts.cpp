// Contexts and several devices: the current context decides the device and the null stream.
#include <cstring>
#include <thread>

#include "check.h"

int main() {
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext defaultContext = nullptr, extra = nullptr;
    CHECK_ACL(aclrtGetCurrentContext(&defaultContext));
    CHECK_ACL(aclrtCreateContext(&extra, 2));  // becomes current
    int32_t device = -1;
    CHECK_ACL(aclrtGetDevice(&device));
    EXPECT_TRUE(device == 2);

    // Memory goes to the current context's device; copies between devices work.
    void* onTwo = nullptr;
    CHECK_ACL(aclrtMalloc(&onTwo, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtSetCurrentContext(defaultContext));
    CHECK_ACL(aclrtGetDevice(&device));
    EXPECT_TRUE(device == 0);
    void* onZero = nullptr;
    CHECK_ACL(aclrtMalloc(&onZero, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    char text[16] = "npu to npu";
    CHECK_ACL(aclrtMemcpy(onTwo, 4096, text, sizeof text, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtDeviceEnablePeerAccess(2, 0));
    CHECK_ACL(aclrtMemcpy(onZero, 4096, onTwo, sizeof text, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtMemcpy(onZero, 4096, onTwo, 16, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE));
    char back[16] = {0};
    CHECK_ACL(aclrtMemcpy(back, sizeof back, onZero, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT_TRUE(std::strcmp(back, "npu to npu") == 0);
    CHECK_ACL(aclrtDeviceDisablePeerAccess(2));

    // A new thread has no context until it sets one.
    std::thread worker([&] {
        aclrtContext none = nullptr;
        EXPECT_CODE(ACL_ERROR_RT_CONTEXT_NULL, aclrtGetCurrentContext(&none));
        CHECK_ACL(aclrtSetCurrentContext(extra));
        int32_t workerDevice = -1;
        CHECK_ACL(aclrtGetDevice(&workerDevice));
        EXPECT_TRUE(workerDevice == 2);
    });
    worker.join();

    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtDestroyContext(defaultContext));
    CHECK_ACL(aclrtFree(onTwo));
    CHECK_ACL(aclrtDestroyContext(extra));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtSetCurrentContext(extra));
    CHECK_ACL(aclrtFree(onZero));

    // Each aclrtSetDevice adds a reference; memory is released with the last reset.
    CHECK_ACL(aclrtSetDevice(0));
    void* kept = nullptr;
    CHECK_ACL(aclrtMalloc(&kept, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtResetDevice(0));
    size_t freeBytes = 0, total = 0;
    CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeBytes, &total));
    EXPECT_TRUE(total - freeBytes >= (1u << 20));
    CHECK_ACL(aclrtResetDeviceForce(0));
    EXPECT_CODE(ACL_ERROR_RT_MEMORY_FREE, aclrtFree(kept));  // released by the reset
    CHECK_ACL(aclFinalize());
    printf("contexts: PASS\n");
    return 0;
}
