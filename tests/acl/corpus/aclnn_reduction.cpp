/* aclnn reductions against references computed here: ReduceSum (dims, keepDims, a wider dtype),
 * Mean (an out of another type: through the workspace), ArgMax (INT64 and INT32 out); and the
 * documented refusals. */
#include "aclnn_support.h"
#include "aclnnop/aclnn_argmax.h"
#include "aclnnop/aclnn_mean.h"
#include "aclnnop/aclnn_reduce_sum.h"

int main(void) {
    aclrtStream stream = SetUp();
    {
        const int d0 = 2, d1 = 3, d2 = 4;
        std::vector<float> x = TestValues(d0 * d1 * d2, 41);
        DeviceTensor<float> self(x, {d0, d1, d2}, ACL_FLOAT);
        int64_t middle[] = {1};
        aclIntArray *dims = aclCreateIntArray(middle, 1);

        DeviceTensor<float> kept({d0, 1, d2}, ACL_FLOAT);
        RUN_ACLNN(aclnnReduceSum, stream, self.tensor, dims, true, ACL_FLOAT, kept.tensor);
        std::vector<float> sum(d0 * d2, 0.0f), mean(d0 * d2);
        for (int a = 0; a < d0; ++a)
            for (int b = 0; b < d1; ++b)
                for (int c = 0; c < d2; ++c) sum[a * d2 + c] += x[(a * d1 + b) * d2 + c];
        ExpectClose("ReduceSum keepDims", kept.Read(), sum, 1e-6, 1e-6);

        /* INT32 summed as INT64. */
        std::vector<int32_t> ints = {1, 2, 3, 4, 5, 6};
        DeviceTensor<int32_t> iself(ints, {2, 3}, ACL_INT32);
        DeviceTensor<int64_t> isum({2}, ACL_INT64);
        int64_t last[] = {-1};
        aclIntArray *lastDim = aclCreateIntArray(last, 1);
        RUN_ACLNN(aclnnReduceSum, stream, iself.tensor, lastDim, false, ACL_INT64, isum.tensor);
        EXPECT_TRUE((isum.Read() == std::vector<int64_t>{6, 15}));

        /* Mean in FLOAT into a FLOAT16 out: the FLOAT mean lives in the workspace, then a Cast. */
        DeviceTensor<aclFloat16> halfMean({d0, d2}, ACL_FLOAT16);
        uint64_t workspaceSize = 0;
        aclOpExecutor *executor = nullptr;
        CHECK_ACL(aclnnMeanGetWorkspaceSize(self.tensor, dims, false, ACL_FLOAT, halfMean.tensor, &workspaceSize,
                                            &executor));
        EXPECT_TRUE(workspaceSize >= static_cast<uint64_t>(d0 * d2 * 4));
        void *workspace = nullptr;
        CHECK_ACL(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclnnMean(workspace, workspaceSize, executor, stream));
        CHECK_ACL(aclrtSynchronizeStream(stream));
        CHECK_ACL(aclrtFree(workspace));
        for (int i = 0; i < d0 * d2; ++i) mean[i] = sum[i] / d1;
        ExpectClose("Mean into FLOAT16", HalfToFloat(halfMean.Read()), mean, 1e-3, 1e-3);
        DeviceTensor<float> floatMean({d0, d2}, ACL_FLOAT);
        RUN_ACLNN(aclnnMean, stream, self.tensor, dims, false, ACL_FLOAT, floatMean.tensor);
        ExpectClose("Mean", floatMean.Read(), mean, 1e-6, 1e-6);

        /* ArgMax along the last dimension, INT64 and INT32. */
        DeviceTensor<int64_t> index64({d0, d1}, ACL_INT64);
        DeviceTensor<int32_t> index32({d0, d1}, ACL_INT32);
        RUN_ACLNN(aclnnArgMax, stream, self.tensor, 2, false, index64.tensor);
        RUN_ACLNN(aclnnArgMax, stream, self.tensor, -1, false, index32.tensor);
        std::vector<int64_t> best(d0 * d1);
        for (int r = 0; r < d0 * d1; ++r) {
            int arg = 0;
            for (int c = 1; c < d2; ++c)
                if (x[r * d2 + c] > x[r * d2 + arg]) arg = c;
            best[r] = arg;
        }
        EXPECT_TRUE(index64.Read() == best);
        std::vector<int32_t> got32 = index32.Read();
        for (int r = 0; r < d0 * d1; ++r) EXPECT_TRUE(got32[r] == best[r]);

        /* Refusals: repeated or out-of-range dims, dtype other than out's, no dims, a FLOAT out of
         * ArgMax, a wrong out shape, an integer dtype for Mean. */
        int64_t twice[] = {1, -2};
        aclIntArray *repeated = aclCreateIntArray(twice, 2);
        int64_t far[] = {3};
        aclIntArray *outside = aclCreateIntArray(far, 1);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnReduceSum, self.tensor, repeated, true, ACL_FLOAT, kept.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnReduceSum, self.tensor, outside, true, ACL_FLOAT, kept.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnReduceSum, self.tensor, dims, true, ACL_DOUBLE, kept.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnReduceSum, self.tensor, dims, false, ACL_FLOAT, kept.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnReduceSum, self.tensor, nullptr, true, ACL_FLOAT, kept.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnArgMax, self.tensor, 2, false, floatMean.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnArgMax, self.tensor, 3, false, index64.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMean, iself.tensor, lastDim, false, ACL_INT32, isum.tensor);
        aclDestroyIntArray(dims);
        aclDestroyIntArray(lastDim);
        aclDestroyIntArray(repeated);
        aclDestroyIntArray(outside);
    }
    TearDown(stream);
    printf("aclnn_reduction: PASS\n");
    return 0;
}
