/* aclnn element-wise operators against references computed here: Add (alpha, broadcasting, a
 * strided view), Adds, InplaceAdd, Sub, Subs, Mul, Muls, Div (integers divide as FLOAT), Divs,
 * InplaceDiv, Gelu (tanh form), Silu, Cast; and the documented refusals. */
#include "aclnn_support.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_div.h"
#include "aclnnop/aclnn_gelu.h"
#include "aclnnop/aclnn_mul.h"
#include "aclnnop/aclnn_silu.h"
#include "aclnnop/aclnn_sub.h"

static void AddSubMulDiv(aclrtStream stream) {
    std::vector<float> a = TestValues(12, 1), b = TestValues(4, 2);
    DeviceTensor<float> self(a, {3, 4}, ACL_FLOAT);
    DeviceTensor<float> other(b, {4}, ACL_FLOAT); /* broadcast along the rows */
    DeviceTensor<float> out({3, 4}, ACL_FLOAT);
    float alphaValue = 1.5f;
    aclScalar *alpha = aclCreateScalar(&alphaValue, ACL_FLOAT);
    std::vector<float> expected(12);

    RUN_ACLNN(aclnnAdd, stream, self.tensor, other.tensor, alpha, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] + 1.5f * b[i % 4];
    ExpectClose("Add", out.Read(), expected, 1e-6, 1e-6);

    RUN_ACLNN(aclnnSub, stream, self.tensor, other.tensor, alpha, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] - 1.5f * b[i % 4];
    ExpectClose("Sub", out.Read(), expected, 1e-6, 1e-6);

    RUN_ACLNN(aclnnMul, stream, self.tensor, other.tensor, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] * b[i % 4];
    ExpectClose("Mul", out.Read(), expected, 1e-6, 0);

    RUN_ACLNN(aclnnDiv, stream, self.tensor, other.tensor, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] / b[i % 4];
    ExpectClose("Div", out.Read(), expected, 1e-6, 0);

    float two = 2.0f;
    aclScalar *scalar = aclCreateScalar(&two, ACL_FLOAT);
    RUN_ACLNN(aclnnAdds, stream, self.tensor, scalar, alpha, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] + 3.0f;
    ExpectClose("Adds", out.Read(), expected, 1e-6, 1e-6);
    RUN_ACLNN(aclnnSubs, stream, self.tensor, scalar, alpha, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] - 3.0f;
    ExpectClose("Subs", out.Read(), expected, 1e-6, 1e-6);
    RUN_ACLNN(aclnnMuls, stream, self.tensor, scalar, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] * 2.0f;
    ExpectClose("Muls", out.Read(), expected, 0, 0);
    RUN_ACLNN(aclnnDivs, stream, self.tensor, scalar, out.tensor);
    for (int i = 0; i < 12; ++i) expected[i] = a[i] / 2.0f;
    ExpectClose("Divs", out.Read(), expected, 0, 0);

    /* In place: self += 1.5 * other, then self /= other. */
    RUN_ACLNN(aclnnInplaceAdd, stream, self.tensor, other.tensor, alpha);
    std::vector<float> updated(12);
    for (int i = 0; i < 12; ++i) updated[i] = a[i] + 1.5f * b[i % 4];
    ExpectClose("InplaceAdd", self.Read(), updated, 1e-6, 1e-6);
    RUN_ACLNN(aclnnInplaceDiv, stream, self.tensor, other.tensor);
    for (int i = 0; i < 12; ++i) updated[i] = updated[i] / b[i % 4];
    ExpectClose("InplaceDiv", self.Read(), updated, 1e-5, 1e-6);
    RUN_ACLNN(aclnnInplaceMuls, stream, self.tensor, scalar);
    for (int i = 0; i < 12; ++i) updated[i] *= 2.0f;
    ExpectClose("InplaceMuls", self.Read(), updated, 1e-5, 1e-6);

    /* Integers divide as FLOAT; the sum of two INT32 stays INT32. */
    std::vector<int32_t> ia = {7, -7, 9, 10}, ib = {2, 2, 4, 3};
    DeviceTensor<int32_t> iself(ia, {4}, ACL_INT32), iother(ib, {4}, ACL_INT32);
    DeviceTensor<float> fout({4}, ACL_FLOAT);
    RUN_ACLNN(aclnnDiv, stream, iself.tensor, iother.tensor, fout.tensor);
    ExpectClose("Div int", fout.Read(), std::vector<float>{3.5f, -3.5f, 2.25f, 10.0f / 3.0f}, 1e-6, 0);
    DeviceTensor<int32_t> iout({4}, ACL_INT32);
    int32_t intAlpha = 3;
    aclScalar *ialpha = aclCreateScalar(&intAlpha, ACL_INT32);
    RUN_ACLNN(aclnnAdd, stream, iself.tensor, iother.tensor, ialpha, iout.tensor);
    EXPECT_TRUE((iout.Read() == std::vector<int32_t>{13, -1, 21, 19}));

    /* Refusals: nullptr, shapes that do not broadcast, out of the wrong shape, a FLOAT result
     * into an INT32 out, a floating alpha with integer tensors, too many dimensions. */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnAdd, nullptr, other.tensor, alpha, out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnAdd, self.tensor, other.tensor, nullptr, out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnMul, self.tensor, other.tensor, nullptr);
    DeviceTensor<float> three({3}, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnAdd, self.tensor, three.tensor, alpha, out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnAdd, self.tensor, other.tensor, alpha, fout.tensor);
    DeviceTensor<int32_t> iout12({3, 4}, ACL_INT32);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMul, self.tensor, other.tensor, iout12.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnAdd, iself.tensor, iother.tensor, alpha, iout.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnDiv, iself.tensor, iother.tensor, iout.tensor);
    std::vector<int64_t> nine(9, 1);
    DeviceTensor<float> deep(nine, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMul, deep.tensor, deep.tensor, deep.tensor);
    aclDestroyScalar(alpha);
    aclDestroyScalar(scalar);
    aclDestroyScalar(ialpha);
}

/* A transposed view (strides, no copy) as an input. */
static void StridedView(aclrtStream stream) {
    std::vector<float> a = TestValues(6, 3);
    DeviceTensor<float> base(a, {2, 3}, ACL_FLOAT);
    std::vector<int64_t> viewDims = {3, 2}, viewStrides = {1, 3}, storage = {2, 3};
    aclTensor *transposed = aclCreateTensor(viewDims.data(), 2, ACL_FLOAT, viewStrides.data(), 0, ACL_FORMAT_ND,
                                            storage.data(), 2, base.address);
    EXPECT_TRUE(transposed != nullptr);
    DeviceTensor<float> out({3, 2}, ACL_FLOAT);
    float one = 1.0f;
    aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
    RUN_ACLNN(aclnnAdd, stream, transposed, transposed, alpha, out.tensor);
    std::vector<float> expected(6);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) expected[i * 2 + j] = 2 * a[j * 3 + i];
    ExpectClose("Add of a transposed view", out.Read(), expected, 0, 0);
    /* A view that runs past its storage is refused. */
    std::vector<int64_t> bigStrides = {1, 4};
    aclTensor *outside = aclCreateTensor(viewDims.data(), 2, ACL_FLOAT, bigStrides.data(), 0, ACL_FORMAT_ND,
                                         storage.data(), 2, base.address);
    uint64_t ws = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_ACL(aclnnAddGetWorkspaceSize(outside, outside, alpha, out.tensor, &ws, &executor));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnAdd(nullptr, ws, executor, stream));
    aclDestroyTensor(transposed);
    aclDestroyTensor(outside);
    aclDestroyScalar(alpha);
}

static float GeluTanh(float x) {
    return 0.5f * x * (1.0f + std::tanh(std::sqrt(2.0f / 3.14159265358979f) * (x + 0.044715f * x * x * x)));
}

static void Activations(aclrtStream stream) {
    std::vector<float> a = TestValues(16, 4);
    for (float &v : a) v *= 4.0f;
    DeviceTensor<float> self(a, {4, 4}, ACL_FLOAT), out({4, 4}, ACL_FLOAT);
    std::vector<float> expected(16);
    RUN_ACLNN(aclnnGelu, stream, self.tensor, out.tensor);
    for (int i = 0; i < 16; ++i) expected[i] = GeluTanh(a[i]);
    ExpectClose("Gelu", out.Read(), expected, 1e-5, 1e-6);
    RUN_ACLNN(aclnnSilu, stream, self.tensor, out.tensor);
    for (int i = 0; i < 16; ++i) expected[i] = a[i] / (1.0f + std::exp(-a[i]));
    ExpectClose("Silu", out.Read(), expected, 1e-5, 1e-6);
    /* FLOAT16 in, FLOAT16 out. */
    DeviceTensor<aclFloat16> half(FloatToHalf(a), {4, 4}, ACL_FLOAT16), halfOut({4, 4}, ACL_FLOAT16);
    RUN_ACLNN(aclnnSilu, stream, half.tensor, halfOut.tensor);
    for (int i = 0; i < 16; ++i) {
        float x = aclFloat16ToFloat(aclFloatToFloat16(a[i]));
        expected[i] = x / (1.0f + std::exp(-x));
    }
    ExpectClose("Silu fp16", HalfToFloat(halfOut.Read()), expected, 2e-3, 2e-3);
    /* self and out must agree in dtype and shape; INT32 has no Gelu. */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnGelu, self.tensor, halfOut.tensor);
    DeviceTensor<float> other({2, 8}, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnSilu, self.tensor, other.tensor);
    DeviceTensor<int32_t> ints({4, 4}, ACL_INT32);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnGelu, ints.tensor, ints.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnSilu, self.tensor, nullptr);
}

static void Casts(aclrtStream stream) {
    std::vector<float> a = {1.25f, -2.75f, 0.0f, 65504.0f, 3.999f, -0.5f};
    DeviceTensor<float> self(a, {2, 3}, ACL_FLOAT);
    DeviceTensor<aclFloat16> half({2, 3}, ACL_FLOAT16);
    RUN_ACLNN(aclnnCast, stream, self.tensor, ACL_FLOAT16, half.tensor);
    std::vector<aclFloat16> halfValues = half.Read();
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(halfValues[i] == aclFloatToFloat16(a[i]));
    DeviceTensor<int32_t> ints({2, 3}, ACL_INT32);
    RUN_ACLNN(aclnnCast, stream, self.tensor, ACL_INT32, ints.tensor);
    EXPECT_TRUE((ints.Read() == std::vector<int32_t>{1, -2, 0, 65504, 3, 0}));
    DeviceTensor<uint8_t> bools({2, 3}, ACL_BOOL);
    RUN_ACLNN(aclnnCast, stream, self.tensor, ACL_BOOL, bools.tensor);
    EXPECT_TRUE((bools.Read() == std::vector<uint8_t>{1, 1, 0, 1, 1, 1}));
    /* out must be of dtype; FLOAT8 has no kernel on Atlas A2; shapes must agree. */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnCast, self.tensor, ACL_INT64, ints.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnCast, self.tensor, ACL_FLOAT8_E4M3FN, ints.tensor);
    DeviceTensor<int32_t> flat({6}, ACL_INT32);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnCast, self.tensor, ACL_INT32, flat.tensor);
}

int main(void) {
    aclrtStream stream = SetUp();
    AddSubMulDiv(stream);
    StridedView(stream);
    Activations(stream);
    Casts(stream);
    TearDown(stream);
    printf("aclnn_elementwise: PASS\n");
    return 0;
}
