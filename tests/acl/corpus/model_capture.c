/* Stream capture into a model runtime instance (aclmdlRI), runtime part: copies and memsets
 * queued on a capturing stream are recorded, not run; every aclmdlRIExecuteAsync runs them on the
 * memory they were given; what a capture mode forbids is refused with CANN's codes. */
#include <string.h>

#include "check.h"

#define COUNT 1024

static void fill(float *values, float start) {
    for (int i = 0; i < COUNT; ++i) values[i] = start + (float)i;
}

int main(void) {
    CHECK_ACL(aclInit(NULL));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK_ACL(aclrtCreateStream(&stream));
    const size_t bytes = COUNT * sizeof(float);
    float *host = NULL, back[COUNT];
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_ACL(aclrtMallocHost((void **)&host, bytes));
    CHECK_ACL(aclrtMalloc(&a, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&b, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&c, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemset(b, bytes, 0, bytes));
    CHECK_ACL(aclrtMemset(c, bytes, 0, bytes));

    /* The default stream cannot be captured; an unknown mode is refused. */
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclmdlRICaptureBegin(NULL, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    EXPECT_CODE(ACL_ERROR_INVALID_PARAM, aclmdlRICaptureBegin(stream, (aclmdlRICaptureMode)7));
    aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE;
    aclmdlRI model = NULL;
    CHECK_ACL(aclmdlRICaptureGetInfo(stream, &status, &model));
    EXPECT_TRUE(status == ACL_MODEL_RI_CAPTURE_STATUS_NONE && model == NULL);
    EXPECT_CODE(ACL_ERROR_RT_STREAM_NOT_CAPTURED, aclmdlRICaptureEnd(stream, &model));

    /* Capture: host -> a (pinned), a -> b, memset c. Nothing moves yet. */
    fill(host, 1.0f);
    CHECK_ACL(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    EXPECT_CODE(ACL_ERROR_RT_STREAM_CAPTURED, aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    CHECK_ACL(aclrtMemcpyAsync(a, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_ACL(aclrtMemcpyAsync(b, bytes, a, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
    CHECK_ACL(aclrtMemsetAsync(c, bytes, 0x3f, bytes, stream));
    CHECK_ACL(aclmdlRICaptureGetInfo(stream, &status, &model));
    EXPECT_TRUE(status == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE && model != NULL);
    /* What a GLOBAL capture forbids, and what npusim does not capture. */
    EXPECT_CODE(ACL_ERROR_RT_STREAM_CAPTURED, aclrtSynchronizeStream(stream));
    EXPECT_CODE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, aclrtMemcpy(back, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT_CODE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, aclrtMemset(c, bytes, 0, bytes));
    EXPECT_CODE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, aclrtSynchronizeDevice());
    EXPECT_CODE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                aclrtMemcpyAsync(a, bytes, back, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream)); /* pageable */
    aclrtEvent event = NULL;
    CHECK_ACL(aclrtCreateEvent(&event));
    EXPECT_CODE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, aclrtRecordEvent(event, stream));
    aclmdlRI during = model;
    CHECK_ACL(aclmdlRICaptureEnd(stream, &model));
    EXPECT_TRUE(model != NULL && model == during);
    aclmdlRI none = NULL;
    CHECK_ACL(aclmdlRICaptureGetInfo(stream, &status, &none));
    EXPECT_TRUE(status == ACL_MODEL_RI_CAPTURE_STATUS_NONE && none == NULL);
    EXPECT_CODE(ACL_ERROR_RT_STREAM_NOT_CAPTURED, aclmdlRICaptureEnd(stream, &none));
    CHECK_ACL(aclrtMemcpy(back, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST)); /* allowed again */
    for (int i = 0; i < COUNT; ++i) EXPECT_TRUE(back[i] == 0.0f);              /* nothing ran */

    /* Every execution moves the data again, from the memory as it is then. */
    CHECK_ACL(aclmdlRIExecuteAsync(model, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_ACL(aclrtMemcpy(back, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < COUNT; ++i) EXPECT_TRUE(back[i] == 1.0f + (float)i);
    unsigned char bytesOfC[16];
    CHECK_ACL(aclrtMemcpy(bytesOfC, sizeof bytesOfC, c, sizeof bytesOfC, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 16; ++i) EXPECT_TRUE(bytesOfC[i] == 0x3f);
    fill(host, 100.0f);
    aclrtStream other = NULL;
    CHECK_ACL(aclrtCreateStream(&other)); /* a model runs on any stream of its device */
    CHECK_ACL(aclmdlRIExecuteAsync(model, other));
    CHECK_ACL(aclrtSynchronizeStream(other));
    CHECK_ACL(aclrtMemcpy(back, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < COUNT; ++i) EXPECT_TRUE(back[i] == 100.0f + (float)i);

    /* An execution is one launch from the host: no slower on the device than the tasks queued
     * one by one, and it takes simulated time. */
    aclrtEvent start = NULL, end = NULL;
    CHECK_ACL(aclrtCreateEvent(&start));
    CHECK_ACL(aclrtCreateEvent(&end));
    CHECK_ACL(aclrtRecordEvent(start, stream));
    CHECK_ACL(aclmdlRIExecuteAsync(model, stream));
    CHECK_ACL(aclrtRecordEvent(end, stream));
    CHECK_ACL(aclrtSynchronizeEvent(end));
    float modelMs = 0, directMs = 0;
    CHECK_ACL(aclrtEventElapsedTime(&modelMs, start, end));
    CHECK_ACL(aclrtRecordEvent(start, stream));
    CHECK_ACL(aclrtMemcpyAsync(a, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_ACL(aclrtMemcpyAsync(b, bytes, a, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
    CHECK_ACL(aclrtMemsetAsync(c, bytes, 0x3f, bytes, stream));
    CHECK_ACL(aclrtRecordEvent(end, stream));
    CHECK_ACL(aclrtSynchronizeEvent(end));
    CHECK_ACL(aclrtEventElapsedTime(&directMs, start, end));
    EXPECT_TRUE(modelMs > 0.0f && modelMs <= directMs);

    /* RELAXED mode forbids nothing; a capture ends with its stream. */
    CHECK_ACL(aclmdlRICaptureBegin(other, ACL_MODEL_RI_CAPTURE_MODE_RELAXED));
    CHECK_ACL(aclrtMemcpy(back, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_ACL(aclrtDestroyStream(other));

    CHECK_ACL(aclmdlRIDestroy(model));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclmdlRIExecuteAsync(model, stream));
    EXPECT_CODE(ACL_ERROR_RT_PARAM_INVALID, aclmdlRIDestroy(model));
    CHECK_ACL(aclrtDestroyEvent(event));
    CHECK_ACL(aclrtDestroyEvent(start));
    CHECK_ACL(aclrtDestroyEvent(end));
    CHECK_ACL(aclrtFree(a));
    CHECK_ACL(aclrtFree(b));
    CHECK_ACL(aclrtFree(c));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("model_capture: PASS\n");
    return 0;
}
