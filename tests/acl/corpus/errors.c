/* Error handling in C: every refusal returns CANN's code and leaves a recent error message. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void expectMessage(const char *needle) {
    const char *message = aclGetRecentErrMsg();
    if (message == NULL || strstr(message, needle) == NULL) {
        fprintf(stderr, "recent error message %s does not contain \"%s\"\n", message ? message : "(null)", needle);
        exit(1);
    }
    /* Reading the message clears it. */
    EXPECT_TRUE(aclGetRecentErrMsg() == NULL);
}

int main(void) {
    /* A small simulated HBM, so that running out of it is quick (read when the runtime starts). */
    setenv("NPUSIM_HBM_SIZE", "64M", 1);
    EXPECT_CODE(ACL_ERROR_UNINITIALIZE, aclFinalize());
    EXPECT_CODE(ACL_ERROR_INVALID_FILE, aclInit("/nonexistent/acl.json"));
    CHECK_ACL(aclInit(NULL));
    EXPECT_CODE(ACL_ERROR_REPEAT_INITIALIZE, aclInit(NULL));

    /* No device set: no context. */
    void *pointer = NULL;
    EXPECT_CODE(ACL_ERROR_RT_CONTEXT_NULL, aclrtMalloc(&pointer, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    aclrtStream stream = NULL;
    EXPECT_CODE(ACL_ERROR_RT_CONTEXT_NULL, aclrtCreateStream(&stream));

    EXPECT_CODE(ACL_ERROR_RT_INVALID_DEVICEID, aclrtSetDevice(8));
    expectMessage("invalid device");
    EXPECT_TRUE(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_TRUE(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
    EXPECT_CODE(ACL_ERROR_RT_INVALID_DEVICEID, aclrtSetDevice(-1));
    CHECK_ACL(aclrtSetDevice(0));

    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtMalloc(&pointer, 0, ACL_MEM_MALLOC_HUGE_FIRST));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtMalloc(&pointer, 64, (aclrtMemMallocPolicy)99));
    EXPECT_CODE(ACL_ERROR_RT_MEMORY_ALLOCATION, aclrtMalloc(&pointer, (size_t)1 << 30, ACL_MEM_MALLOC_HUGE_FIRST));
    expectMessage("out of memory");

    void *device = NULL;
    CHECK_ACL(aclrtMalloc(&device, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    char host[8192];
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtMemcpy(device, 16, host, 32, ACL_MEMCPY_HOST_TO_DEVICE));
    /* The kind must match the addresses. */
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtMemcpy(host, 64, device, 64, ACL_MEMCPY_HOST_TO_DEVICE));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtMemcpy(device, 64, host, 64, ACL_MEMCPY_DEVICE_TO_DEVICE));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtMemcpy(device, 64, host, 64, (aclrtMemcpyKind)42));
    /* A copy past the end of the allocation is refused instead of corrupting memory. */
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtMemcpy(device, 8192, host, 8192, ACL_MEMCPY_HOST_TO_DEVICE));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtMemset(host, 64, 0, 64));
    EXPECT_CODE(ACL_ERROR_RT_MEMORY_FREE, aclrtFree(host));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtFreeHost(host));
    CHECK_ACL(aclrtFree(device));
    EXPECT_CODE(ACL_ERROR_RT_MEMORY_FREE, aclrtFree(device));

    CHECK_ACL(aclrtCreateStream(&stream));
    CHECK_ACL(aclrtDestroyStream(stream));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtSynchronizeStream(stream));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtDestroyStream(stream));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtDestroyStream(NULL));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtCreateStreamWithConfig(&stream, 8, 0));

    /* Events without a timeline flag carry no timestamp. */
    aclrtEvent a = NULL, b = NULL;
    CHECK_ACL(aclrtCreateEventWithFlag(&a, ACL_EVENT_SYNC));
    CHECK_ACL(aclrtCreateEventWithFlag(&b, ACL_EVENT_SYNC));
    CHECK_ACL(aclrtRecordEvent(a, NULL));
    CHECK_ACL(aclrtRecordEvent(b, NULL));
    CHECK_ACL(aclrtSynchronizeEvent(b));
    float ms = 0;
    EXPECT_CODE(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, aclrtEventElapsedTime(&ms, a, b));
    CHECK_ACL(aclrtDestroyEvent(a));
    CHECK_ACL(aclrtDestroyEvent(b));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclrtDestroyEvent(a));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtSynchronizeStreamWithTimeout(NULL, 0));

    /* Devices: peers, capabilities. */
    int32_t canAccess = 0;
    CHECK_ACL(aclrtDeviceCanAccessPeer(&canAccess, 0, 1));
    EXPECT_TRUE(canAccess == 1);
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclrtDeviceCanAccessPeer(&canAccess, 0, 0));
    EXPECT_CODE(ACL_ERROR_RT_INVALID_DEVICEID, aclrtDeviceCanAccessPeer(&canAccess, 0, 9));
    int64_t cores = 0;
    CHECK_ACL(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &cores));
    EXPECT_TRUE(cores == 24);
    EXPECT_CODE(ACL_ERROR_RT_INVALID_DEVICEID, aclGetDeviceCapability(12, ACL_DEVICE_INFO_AI_CORE_NUM, &cores));

    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    EXPECT_CODE(ACL_ERROR_REPEAT_FINALIZE, aclFinalize());
    printf("errors: PASS\n");
    return 0;
}
