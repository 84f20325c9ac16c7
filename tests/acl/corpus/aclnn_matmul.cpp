/* aclnn matrix products against references computed here: Mm, BatchMatMul, Matmul (batch
 * broadcasting, 1-D operands), FLOAT16, cubeMathType (KEEP_DTYPE exact fp32; ALLOW_FP32_DOWN_
 * PRECISION and USE_HF32: operands rounded to HF32; USE_FP16: operands cast to FLOAT16 in the
 * workspace), the workspace contract and the refusals. */
#include <cstdint>

#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_matmul.h"
#include "aclnnop/aclnn_matmul.h"
#include "aclnnop/aclnn_mm.h"

/* C[b] = A[b or 0] @ B[b or 0] in double. */
static std::vector<float> Reference(const std::vector<float> &a, const std::vector<float> &b, int batchA, int batchB,
                                    int m, int k, int n) {
    int batch = batchA > batchB ? batchA : batchB;
    std::vector<float> c(static_cast<size_t>(batch * m * n));
    for (int t = 0; t < batch; ++t)
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
                double sum = 0;
                for (int p = 0; p < k; ++p)
                    sum += static_cast<double>(a[(batchA == 1 ? 0 : t) * m * k + i * k + p]) *
                           b[(batchB == 1 ? 0 : t) * k * n + p * n + j];
                c[t * m * n + i * n + j] = static_cast<float>(sum);
            }
    return c;
}

static float RoundToHf32(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    bits = (bits + 0x800u) & ~0xfffu; /* 11 mantissa bits, ties away from zero */
    std::memcpy(&value, &bits, sizeof bits);
    return value;
}

static std::vector<float> Rounded(const std::vector<float> &values, bool hf32) {
    std::vector<float> out;
    for (float v : values) out.push_back(hf32 ? RoundToHf32(v) : aclFloat16ToFloat(aclFloatToFloat16(v)));
    return out;
}

static void Products(aclrtStream stream) {
    const int m = 5, k = 7, n = 3;
    std::vector<float> a = TestValues(m * k, 11), b = TestValues(k * n, 12);
    DeviceTensor<float> self(a, {m, k}, ACL_FLOAT), mat2(b, {k, n}, ACL_FLOAT), out({m, n}, ACL_FLOAT);
    RUN_ACLNN(aclnnMm, stream, self.tensor, mat2.tensor, out.tensor, 0);
    ExpectClose("Mm", out.Read(), Reference(a, b, 1, 1, m, k, n), 1e-5, 1e-6);

    std::vector<float> ba = TestValues(2 * m * k, 13), bb = TestValues(2 * k * n, 14);
    DeviceTensor<float> bself(ba, {2, m, k}, ACL_FLOAT), bmat2(bb, {2, k, n}, ACL_FLOAT), bout({2, m, n}, ACL_FLOAT);
    RUN_ACLNN(aclnnBatchMatMul, stream, bself.tensor, bmat2.tensor, bout.tensor, 0);
    ExpectClose("BatchMatMul", bout.Read(), Reference(ba, bb, 2, 2, m, k, n), 1e-5, 1e-6);

    /* Matmul broadcasts a 2-D mat2 over the batch of self. */
    RUN_ACLNN(aclnnMatmul, stream, bself.tensor, mat2.tensor, bout.tensor, 0);
    ExpectClose("Matmul 3-D @ 2-D", bout.Read(), Reference(ba, b, 2, 1, m, k, n), 1e-5, 1e-6);
    /* A 1-D mat2 is a vector: out [m]. */
    std::vector<float> v = TestValues(k, 15);
    DeviceTensor<float> vec(v, {k}, ACL_FLOAT), vout({m}, ACL_FLOAT);
    RUN_ACLNN(aclnnMatmul, stream, self.tensor, vec.tensor, vout.tensor, 0);
    ExpectClose("Matmul 2-D @ 1-D", vout.Read(), Reference(a, v, 1, 1, m, k, 1), 1e-5, 1e-6);

    /* FLOAT16 operands, FLOAT16 result. */
    DeviceTensor<aclFloat16> hself(FloatToHalf(a), {m, k}, ACL_FLOAT16), hmat2(FloatToHalf(b), {k, n}, ACL_FLOAT16),
        hout({m, n}, ACL_FLOAT16);
    RUN_ACLNN(aclnnMm, stream, hself.tensor, hmat2.tensor, hout.tensor, 0);
    ExpectClose("Mm fp16", HalfToFloat(hout.Read()), Reference(Rounded(a, false), Rounded(b, false), 1, 1, m, k, n),
                4e-3, 2e-3);
}

static void CubeMathTypes(aclrtStream stream) {
    const int m = 4, k = 64, n = 4;
    /* Values with more mantissa bits than HF32 keeps. */
    std::vector<float> a = TestValues(m * k, 21), b = TestValues(k * n, 22);
    for (float &x : a) x = x * 1.0001237f + 1.0e-4f;
    DeviceTensor<float> self(a, {m, k}, ACL_FLOAT), mat2(b, {k, n}, ACL_FLOAT), out({m, n}, ACL_FLOAT);
    const std::vector<float> exact = Reference(a, b, 1, 1, m, k, n);
    const std::vector<float> hf32 = Reference(Rounded(a, true), Rounded(b, true), 1, 1, m, k, n);
    const std::vector<float> fp16 = Reference(Rounded(a, false), Rounded(b, false), 1, 1, m, k, n);

    RUN_ACLNN(aclnnMm, stream, self.tensor, mat2.tensor, out.tensor, 0); /* KEEP_DTYPE */
    ExpectClose("KEEP_DTYPE", out.Read(), exact, 1e-5, 1e-5);
    RUN_ACLNN(aclnnMm, stream, self.tensor, mat2.tensor, out.tensor, 1); /* ALLOW_FP32_DOWN_PRECISION: HF32 */
    std::vector<float> down = out.Read();
    ExpectClose("ALLOW_FP32_DOWN_PRECISION", down, hf32, 1e-5, 1e-5);
    bool differs = false;
    for (int i = 0; i < m * n; ++i) differs = differs || std::fabs(down[i] - exact[i]) > 1e-5;
    EXPECT_TRUE(differs); /* HF32 really rounded the operands */
    RUN_ACLNN(aclnnMm, stream, self.tensor, mat2.tensor, out.tensor, 3); /* USE_HF32 */
    ExpectClose("USE_HF32", out.Read(), hf32, 1e-5, 1e-5);
    RUN_ACLNN(aclnnMm, stream, self.tensor, mat2.tensor, out.tensor, 4); /* USE_FP32_ADD */
    ExpectClose("USE_FP32_ADD", out.Read(), exact, 1e-5, 1e-5);

    /* USE_FP16: the FLOAT operands and the FLOAT16 result live in the workspace. */
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_ACL(aclnnMmGetWorkspaceSize(self.tensor, mat2.tensor, out.tensor, 2, &workspaceSize, &executor));
    EXPECT_TRUE(workspaceSize >= static_cast<uint64_t>((m * k + k * n + m * n) * 2));
    void *workspace = nullptr;
    CHECK_ACL(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclSetAclOpExecutorRepeatable(executor));
    /* Too small a workspace, no workspace, or host memory: refused, the executor stays usable. */
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnMm(workspace, workspaceSize - 1, executor, stream));
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclnnMm(nullptr, workspaceSize, executor, stream));
    std::vector<char> host(workspaceSize);
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnMm(host.data(), workspaceSize, executor, stream));
    CHECK_ACL(aclnnMm(workspace, workspaceSize, executor, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    ExpectClose("USE_FP16", out.Read(), fp16, 2e-3, 2e-3);
    CHECK_ACL(aclDestroyAclOpExecutor(executor));
    CHECK_ACL(aclrtFree(workspace));
}

static void Refusals(void) {
    DeviceTensor<float> a({4, 3}, ACL_FLOAT), b({5, 2}, ACL_FLOAT), out({4, 2}, ACL_FLOAT);
    DeviceTensor<float> b3({3, 2}, ACL_FLOAT), cube({2, 4, 3}, ACL_FLOAT);
    DeviceTensor<int32_t> ia({4, 3}, ACL_INT32), ib({3, 2}, ACL_INT32), iout({4, 2}, ACL_INT32);
    DeviceTensor<aclFloat16> ha({4, 3}, ACL_FLOAT16), hb({3, 2}, ACL_FLOAT16), hout({4, 2}, ACL_FLOAT16);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnMm, a.tensor, nullptr, out.tensor, 0);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMm, a.tensor, b.tensor, out.tensor, 0);     /* k differs */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMm, ia.tensor, ib.tensor, iout.tensor, 0);  /* INT32 */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMm, cube.tensor, b3.tensor, out.tensor, 0); /* Mm is 2-D */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMm, a.tensor, b3.tensor, out.tensor, 5);    /* no such mode */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMm, ha.tensor, hb.tensor, hout.tensor, 3);  /* USE_HF32 on fp16 */
    DeviceTensor<float> wrong({4, 3}, ACL_FLOAT); /* wrong out shape */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMm, a.tensor, b3.tensor, wrong.tensor, 0);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnBatchMatMul, a.tensor, b3.tensor, out.tensor, 0);
}

int main(void) {
    aclrtStream stream = SetUp();
    Products(stream);
    CubeMathTypes(stream);
    Refusals();
    TearDown(stream);
    printf("aclnn_matmul: PASS\n");
    return 0;
}
