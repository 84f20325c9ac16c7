/* Device and memory lifecycle in C: init, devices, malloc/memcpy of every kind/memset,
 * host memory, memory information, reset, finalize. */
#include <string.h>

#include "check.h"

int main(void) {
    CHECK_ACL(aclInit(NULL));
    uint32_t count = 0;
    CHECK_ACL(aclrtGetDeviceCount(&count));
    EXPECT_TRUE(count == 8);
    CHECK_ACL(aclrtSetDevice(1));
    int32_t device = -1;
    CHECK_ACL(aclrtGetDevice(&device));
    EXPECT_TRUE(device == 1);
    aclrtRunMode mode = ACL_DEVICE;
    CHECK_ACL(aclrtGetRunMode(&mode));
    EXPECT_TRUE(mode == ACL_HOST);
    const char *soc = aclrtGetSocName();
    EXPECT_TRUE(soc != NULL && strcmp(soc, "Ascend910B2") == 0);

    size_t freeBefore = 0, total = 0;
    CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeBefore, &total));
    EXPECT_TRUE(total > ((size_t)60 << 30) && freeBefore <= total);

    const size_t bytes = 1 << 20;
    void *deviceA = NULL, *deviceB = NULL;
    CHECK_ACL(aclrtMalloc(&deviceA, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&deviceB, bytes, ACL_MEM_MALLOC_NORMAL_ONLY));
    size_t freeAfter = 0;
    CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeAfter, &total));
    EXPECT_TRUE(freeBefore - freeAfter >= 2 * bytes);

    unsigned char *host = NULL, *back = NULL;
    CHECK_ACL(aclrtMallocHost((void **)&host, bytes));
    back = (unsigned char *)malloc(bytes);
    for (size_t i = 0; i < bytes; ++i) host[i] = (unsigned char)(i * 7u);
    CHECK_ACL(aclrtMemcpy(deviceA, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtMemcpy(deviceB, bytes, deviceA, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK_ACL(aclrtMemcpy(back, bytes, deviceB, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT_TRUE(memcmp(host, back, bytes) == 0);

    /* ACL_MEMCPY_DEFAULT infers the direction from the addresses. */
    CHECK_ACL(aclrtMemset(deviceB, bytes, 0x5a, bytes / 2));
    CHECK_ACL(aclrtMemcpy(back, bytes, deviceB, bytes, ACL_MEMCPY_DEFAULT));
    EXPECT_TRUE(back[0] == 0x5a && back[bytes / 2 - 1] == 0x5a && back[bytes / 2] == host[bytes / 2]);
    CHECK_ACL(aclrtMemcpy(back, bytes, host, bytes, ACL_MEMCPY_HOST_TO_HOST));
    EXPECT_TRUE(memcmp(host, back, bytes) == 0);

    /* A 2-D copy: 4 rows of 16 bytes out of rows of 64. */
    CHECK_ACL(aclrtMemcpy2d(deviceA, 16, host, 64, 16, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtMemcpy(back, 64, deviceA, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT_TRUE(memcmp(back + 16, host + 64, 16) == 0 && memcmp(back + 48, host + 192, 16) == 0);

    /* Async copies on a stream are complete after the stream is synchronized. */
    aclrtStream stream = NULL;
    CHECK_ACL(aclrtCreateStream(&stream));
    CHECK_ACL(aclrtMemsetAsync(deviceA, bytes, 1, bytes, stream));
    CHECK_ACL(aclrtMemcpyAsync(back, bytes, deviceA, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    EXPECT_TRUE(back[0] == 1 && back[bytes - 1] == 1);
    CHECK_ACL(aclrtDestroyStream(stream));

    CHECK_ACL(aclrtFree(deviceA));
    CHECK_ACL(aclrtFree(deviceB));
    CHECK_ACL(aclrtFreeHost(host));
    free(back);
    size_t freeEnd = 0;
    CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeEnd, &total));
    EXPECT_TRUE(freeEnd == freeBefore);

    int32_t major = 0, minor = 0, patch = 0;
    CHECK_ACL(aclrtGetVersion(&major, &minor, &patch));
    EXPECT_TRUE(major == ACL_MAJOR_VERSION && minor == ACL_MINOR_VERSION);
    aclCANNPackageVersion version;
    CHECK_ACL(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &version));
    printf("CANN %s on %s\n", version.version, soc);

    CHECK_ACL(aclrtResetDevice(1));
    CHECK_ACL(aclFinalize());
    printf("device_memory: PASS\n");
    return 0;
}
