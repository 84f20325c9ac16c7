/* Helpers of the aclnn corpus programs (C++): device tensors made from host vectors, the
 * two-phase call with its workspace, reading results back, comparing with a reference the
 * program computes itself. Written against CANN's documented API only. */
#ifndef NPUSIM_ACL_CORPUS_ACLNN_SUPPORT_H_
#define NPUSIM_ACL_CORPUS_ACLNN_SUPPORT_H_

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "check.h"

/* Contiguous strides of a shape. */
static inline std::vector<int64_t> ContiguousStrides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    return strides;
}

static inline int64_t ShapeSize(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        n *= d;
    }
    return n;
}

/* A device tensor holding host values of type T (as dataType), contiguous. */
template <typename T>
struct DeviceTensor {
    std::vector<int64_t> shape;
    void *address = nullptr;
    aclTensor *tensor = nullptr;

    DeviceTensor(const std::vector<T> &host, const std::vector<int64_t> &dims, aclDataType dataType) : shape(dims) {
        size_t bytes = host.size() * sizeof(T);
        CHECK_ACL(aclrtMalloc(&address, bytes > 0 ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST));
        if (bytes > 0) {
            CHECK_ACL(aclrtMemcpy(address, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
        }
        std::vector<int64_t> strides = ContiguousStrides(shape);
        tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                 shape.size(), address);
        EXPECT_TRUE(tensor != nullptr);
    }
    DeviceTensor(const std::vector<int64_t> &dims, aclDataType dataType)
        : DeviceTensor(std::vector<T>(static_cast<size_t>(ShapeSize(dims)), T()), dims, dataType) {}
    ~DeviceTensor() {
        aclDestroyTensor(tensor);
        aclrtFree(address);
    }
    DeviceTensor(const DeviceTensor &) = delete;
    DeviceTensor &operator=(const DeviceTensor &) = delete;

    std::vector<T> Read() const {
        std::vector<T> host(static_cast<size_t>(ShapeSize(shape)));
        size_t bytes = host.size() * sizeof(T);
        if (bytes > 0) {
            CHECK_ACL(aclrtMemcpy(host.data(), bytes, address, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
        }
        return host;
    }
};

/* Phase one, the workspace it asks for, phase two on `stream`, then the stream synchronised. */
#define RUN_ACLNN(op, stream, ...)                                                             \
    do {                                                                                       \
        uint64_t run_ws_size_ = 0;                                                             \
        aclOpExecutor *run_executor_ = nullptr;                                                \
        CHECK_ACL(op##GetWorkspaceSize(__VA_ARGS__, &run_ws_size_, &run_executor_));          \
        void *run_ws_ = nullptr;                                                               \
        if (run_ws_size_ > 0) {                                                                \
            CHECK_ACL(aclrtMalloc(&run_ws_, run_ws_size_, ACL_MEM_MALLOC_HUGE_FIRST));         \
        }                                                                                      \
        CHECK_ACL(op(run_ws_, run_ws_size_, run_executor_, stream));                           \
        CHECK_ACL(aclrtSynchronizeStream(stream));                                             \
        if (run_ws_ != nullptr) {                                                              \
            CHECK_ACL(aclrtFree(run_ws_));                                                     \
        }                                                                                      \
    } while (0)

/* Phase one must fail with `expected` (and leave a recent error message). */
#define EXPECT_PHASE_ONE(expected, op, ...)                                                    \
    do {                                                                                       \
        uint64_t fail_ws_size_ = 0;                                                            \
        aclOpExecutor *fail_executor_ = nullptr;                                               \
        EXPECT_CODE(expected, op##GetWorkspaceSize(__VA_ARGS__, &fail_ws_size_, &fail_executor_)); \
        EXPECT_TRUE(aclGetRecentErrMsg() != nullptr);                                          \
    } while (0)

/* |actual - expected| <= atol + rtol * |expected| elementwise. */
template <typename A, typename E>
static inline void ExpectClose(const char *what, const std::vector<A> &actual, const std::vector<E> &expected,
                               double rtol, double atol) {
    if (actual.size() != expected.size()) {
        fprintf(stderr, "%s: %zu values, expected %zu\n", what, actual.size(), expected.size());
        exit(1);
    }
    for (size_t i = 0; i < actual.size(); ++i) {
        double a = static_cast<double>(actual[i]);
        double e = static_cast<double>(expected[i]);
        if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
            fprintf(stderr, "%s[%zu] = %.9g, expected %.9g\n", what, i, a, e);
            exit(1);
        }
    }
}

static inline std::vector<float> HalfToFloat(const std::vector<aclFloat16> &values) {
    std::vector<float> out;
    for (aclFloat16 v : values) {
        out.push_back(aclFloat16ToFloat(v));
    }
    return out;
}

static inline std::vector<aclFloat16> FloatToHalf(const std::vector<float> &values) {
    std::vector<aclFloat16> out;
    for (float v : values) {
        out.push_back(aclFloatToFloat16(v));
    }
    return out;
}

/* Deterministic test values in [-1, 1). */
static inline std::vector<float> TestValues(size_t count, unsigned seed) {
    std::vector<float> values(count);
    unsigned state = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < count; ++i) {
        state = state * 1664525u + 1013904223u;
        values[i] = static_cast<float>((state >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return values;
}

static inline aclrtStream SetUp(void) {
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    return stream;
}

static inline void TearDown(aclrtStream stream) {
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
}

#endif /* NPUSIM_ACL_CORPUS_ACLNN_SUPPORT_H_ */
