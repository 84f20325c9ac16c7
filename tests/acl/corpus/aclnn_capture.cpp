/* aclnn operators captured into a model runtime instance: aclnnMatmul, aclnnAdd and a copy
 * queued on a capturing stream are recorded (the executors are consumed, nothing runs); every
 * aclmdlRIExecuteAsync runs them on the memory as it is then, with one launch from the host. */
#include "aclnn_support.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_matmul.h"

int main(void) {
    aclrtStream stream = SetUp();
    {
        const int n = 16;
        std::vector<float> x = TestValues(n * n, 71), w = TestValues(n * n, 72), bias = TestValues(n * n, 73);
        DeviceTensor<float> input(x, {n, n}, ACL_FLOAT), weight(w, {n, n}, ACL_FLOAT), offset(bias, {n, n}, ACL_FLOAT);
        DeviceTensor<float> product({n, n}, ACL_FLOAT), sum({n, n}, ACL_FLOAT), copy({n, n}, ACL_FLOAT);
        float one = 1.0f;
        aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);

        auto reference = [&](const std::vector<float> &in) {
            std::vector<float> out(n * n);
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j) {
                    double s = 0;
                    for (int p = 0; p < n; ++p) s += static_cast<double>(in[i * n + p]) * w[p * n + j];
                    out[i * n + j] = static_cast<float>(s) + bias[i * n + j];
                }
            return out;
        };

        CHECK_ACL(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL));
        uint64_t size = 0;
        aclOpExecutor *executor = nullptr;
        CHECK_ACL(aclnnMatmulGetWorkspaceSize(input.tensor, weight.tensor, product.tensor, 0, &size, &executor));
        CHECK_ACL(aclnnMatmul(nullptr, size, executor, stream));
        EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnMatmul(nullptr, size, executor, stream)); /* consumed */
        CHECK_ACL(aclnnAddGetWorkspaceSize(product.tensor, offset.tensor, alpha, sum.tensor, &size, &executor));
        CHECK_ACL(aclnnAdd(nullptr, size, executor, stream));
        CHECK_ACL(aclrtMemcpyAsync(copy.address, n * n * 4, sum.address, n * n * 4, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
        aclmdlRI model = nullptr;
        CHECK_ACL(aclmdlRICaptureEnd(stream, &model));
        ExpectClose("nothing ran during the capture", copy.Read(), std::vector<float>(n * n, 0.0f), 0, 0);

        CHECK_ACL(aclmdlRIExecuteAsync(model, stream));
        CHECK_ACL(aclrtSynchronizeStream(stream));
        ExpectClose("first execution", copy.Read(), reference(x), 1e-5, 1e-5);

        /* New input values (outside the model): the next execution reads them. */
        std::vector<float> x2 = TestValues(n * n, 74);
        CHECK_ACL(aclrtMemcpy(input.address, n * n * 4, x2.data(), n * n * 4, ACL_MEMCPY_HOST_TO_DEVICE));
        aclrtEvent start = nullptr, end = nullptr;
        CHECK_ACL(aclrtCreateEvent(&start));
        CHECK_ACL(aclrtCreateEvent(&end));
        CHECK_ACL(aclrtRecordEvent(start, stream));
        CHECK_ACL(aclmdlRIExecuteAsync(model, stream));
        CHECK_ACL(aclrtRecordEvent(end, stream));
        CHECK_ACL(aclrtSynchronizeEvent(end));
        ExpectClose("second execution", copy.Read(), reference(x2), 1e-5, 1e-5);
        float modelMs = 0, directMs = 0;
        CHECK_ACL(aclrtEventElapsedTime(&modelMs, start, end));
        /* The same work queued one call at a time: each pays its host dispatch. */
        CHECK_ACL(aclrtRecordEvent(start, stream));
        RUN_ACLNN(aclnnMatmul, stream, input.tensor, weight.tensor, product.tensor, 0);
        RUN_ACLNN(aclnnAdd, stream, product.tensor, offset.tensor, alpha, sum.tensor);
        CHECK_ACL(aclrtMemcpyAsync(copy.address, n * n * 4, sum.address, n * n * 4, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
        CHECK_ACL(aclrtRecordEvent(end, stream));
        CHECK_ACL(aclrtSynchronizeEvent(end));
        CHECK_ACL(aclrtEventElapsedTime(&directMs, start, end));
        EXPECT_TRUE(modelMs > 0.0f && modelMs <= directMs);

        CHECK_ACL(aclmdlRIDestroy(model));
        CHECK_ACL(aclrtDestroyEvent(start));
        CHECK_ACL(aclrtDestroyEvent(end));
        aclDestroyScalar(alpha);
    }
    TearDown(stream);
    printf("aclnn_capture: PASS\n");
    return 0;
}
