/* aclnn normalisations against references computed here: Softmax, LayerNorm (weight, bias, the
 * mean and rstd outputs, and without them), RmsNorm (FLOAT and FLOAT16 x, its FLOAT rstd); and
 * the documented refusals (RmsNorm's shape errors are ACLNN_ERR_INNER_TILING_ERROR). */
#include "aclnn_support.h"
#include "aclnnop/aclnn_layer_norm.h"
#include "aclnnop/aclnn_rms_norm.h"
#include "aclnnop/aclnn_softmax.h"

static void Softmax(aclrtStream stream) {
    const int rows = 3, cols = 5;
    std::vector<float> x = TestValues(rows * cols, 31);
    for (float &v : x) v *= 6.0f;
    DeviceTensor<float> self(x, {rows, cols}, ACL_FLOAT), out({rows, cols}, ACL_FLOAT);
    RUN_ACLNN(aclnnSoftmax, stream, self.tensor, -1, out.tensor);
    std::vector<float> expected(rows * cols);
    for (int r = 0; r < rows; ++r) {
        double peak = -1e30, sum = 0;
        for (int c = 0; c < cols; ++c) peak = std::fmax(peak, x[r * cols + c]);
        for (int c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - peak);
        for (int c = 0; c < cols; ++c) expected[r * cols + c] = static_cast<float>(std::exp(x[r * cols + c] - peak) / sum);
    }
    ExpectClose("Softmax dim -1", out.Read(), expected, 1e-5, 1e-7);
    /* Along dim 0: columns sum to one. */
    RUN_ACLNN(aclnnSoftmax, stream, self.tensor, 0, out.tensor);
    std::vector<float> columns = out.Read();
    for (int c = 0; c < cols; ++c) {
        double sum = 0;
        for (int r = 0; r < rows; ++r) sum += columns[r * cols + c];
        EXPECT_TRUE(std::fabs(sum - 1.0) < 1e-5);
    }
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnSoftmax, self.tensor, 2, out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnSoftmax, nullptr, 0, out.tensor);
    DeviceTensor<int32_t> ints({rows, cols}, ACL_INT32);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnSoftmax, ints.tensor, 0, ints.tensor);
}

static void LayerNorm(aclrtStream stream) {
    const int rows = 4, cols = 6;
    const double eps = 1e-5;
    std::vector<float> x = TestValues(rows * cols, 32), w = TestValues(cols, 33), b = TestValues(cols, 34);
    DeviceTensor<float> input(x, {rows, cols}, ACL_FLOAT), weight(w, {cols}, ACL_FLOAT), bias(b, {cols}, ACL_FLOAT);
    DeviceTensor<float> out({rows, cols}, ACL_FLOAT), mean({rows, 1}, ACL_FLOAT), rstd({rows, 1}, ACL_FLOAT);
    int64_t normalized[] = {cols};
    aclIntArray *shape = aclCreateIntArray(normalized, 1);
    RUN_ACLNN(aclnnLayerNorm, stream, input.tensor, shape, weight.tensor, bias.tensor, eps, out.tensor, mean.tensor,
              rstd.tensor);
    std::vector<float> expected(rows * cols), expectedMean(rows), expectedRstd(rows);
    for (int r = 0; r < rows; ++r) {
        double mu = 0, var = 0;
        for (int c = 0; c < cols; ++c) mu += x[r * cols + c];
        mu /= cols;
        for (int c = 0; c < cols; ++c) var += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
        var /= cols;
        const double inv = 1.0 / std::sqrt(var + eps);
        expectedMean[r] = static_cast<float>(mu);
        expectedRstd[r] = static_cast<float>(inv);
        for (int c = 0; c < cols; ++c) expected[r * cols + c] = static_cast<float>((x[r * cols + c] - mu) * inv * w[c] + b[c]);
    }
    ExpectClose("LayerNorm", out.Read(), expected, 1e-5, 1e-5);
    ExpectClose("LayerNorm mean", mean.Read(), expectedMean, 1e-5, 1e-6);
    ExpectClose("LayerNorm rstd", rstd.Read(), expectedRstd, 1e-5, 1e-6);
    /* Without the optional tensors: no weight, no bias, no statistics. */
    RUN_ACLNN(aclnnLayerNorm, stream, input.tensor, shape, nullptr, nullptr, eps, out.tensor, nullptr, nullptr);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            expected[r * cols + c] = (x[r * cols + c] - expectedMean[r]) * expectedRstd[r];
    ExpectClose("LayerNorm plain", out.Read(), expected, 1e-4, 1e-5);
    /* normalizedShape must end input's shape; weight must be normalizedShape; mean [rows, 1]. */
    int64_t wrongShape[] = {5};
    aclIntArray *wrong = aclCreateIntArray(wrongShape, 1);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnLayerNorm, input.tensor, wrong, nullptr, nullptr, eps, out.tensor,
                     nullptr, nullptr);
    DeviceTensor<float> shortWeight({cols - 1}, ACL_FLOAT), flatMean({rows}, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnLayerNorm, input.tensor, shape, shortWeight.tensor, nullptr, eps,
                     out.tensor, nullptr, nullptr);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnLayerNorm, input.tensor, shape, nullptr, nullptr, eps, out.tensor,
                     flatMean.tensor, nullptr);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnLayerNorm, input.tensor, nullptr, nullptr, nullptr, eps,
                     out.tensor, nullptr, nullptr);
    aclDestroyIntArray(shape);
    aclDestroyIntArray(wrong);
}

static void RmsNorm(aclrtStream stream) {
    const int rows = 3, cols = 8;
    const double eps = 1e-6;
    std::vector<float> x = TestValues(rows * cols, 35), g = TestValues(cols, 36);
    std::vector<float> expected(rows * cols), expectedRstd(rows);
    for (int r = 0; r < rows; ++r) {
        double square = 0;
        for (int c = 0; c < cols; ++c) square += static_cast<double>(x[r * cols + c]) * x[r * cols + c];
        const double inv = 1.0 / std::sqrt(square / cols + eps);
        expectedRstd[r] = static_cast<float>(inv);
        for (int c = 0; c < cols; ++c) expected[r * cols + c] = static_cast<float>(x[r * cols + c] * inv * g[c]);
    }
    DeviceTensor<float> input(x, {rows, cols}, ACL_FLOAT), gamma(g, {cols}, ACL_FLOAT);
    DeviceTensor<float> y({rows, cols}, ACL_FLOAT), rstd({rows, 1}, ACL_FLOAT);
    RUN_ACLNN(aclnnRmsNorm, stream, input.tensor, gamma.tensor, eps, y.tensor, rstd.tensor);
    ExpectClose("RmsNorm", y.Read(), expected, 1e-5, 1e-6);
    ExpectClose("RmsNorm rstd", rstd.Read(), expectedRstd, 1e-5, 1e-6);
    /* FLOAT16 x and gamma: y FLOAT16, statistics FLOAT. */
    DeviceTensor<aclFloat16> hinput(FloatToHalf(x), {rows, cols}, ACL_FLOAT16), hgamma(FloatToHalf(g), {cols}, ACL_FLOAT16),
        hy({rows, cols}, ACL_FLOAT16);
    RUN_ACLNN(aclnnRmsNorm, stream, hinput.tensor, hgamma.tensor, eps, hy.tensor, rstd.tensor);
    ExpectClose("RmsNorm fp16", HalfToFloat(hy.Read()), expected, 5e-3, 5e-3);
    /* rstd of the wrong shape, or gamma not matching x's last dimensions: tiling errors. */
    DeviceTensor<float> flatRstd({rows}, ACL_FLOAT), shortGamma({cols - 2}, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_INNER_TILING_ERROR, aclnnRmsNorm, input.tensor, gamma.tensor, eps, y.tensor, flatRstd.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_INNER_TILING_ERROR, aclnnRmsNorm, input.tensor, shortGamma.tensor, eps, y.tensor,
                     rstd.tensor);
    /* rstd must be FLOAT; y must be x's dtype. */
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnRmsNorm, hinput.tensor, hgamma.tensor, eps, hy.tensor, hy.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnRmsNorm, input.tensor, gamma.tensor, eps, hy.tensor, rstd.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnRmsNorm, input.tensor, gamma.tensor, eps, y.tensor, nullptr);
}

int main(void) {
    aclrtStream stream = SetUp();
    CHECK_ACL(aclnnInit(nullptr)); /* programs may initialise aclnn on its own too */
    Softmax(stream);
    LayerNorm(stream);
    RmsNorm(stream);
    CHECK_ACL(aclnnFinalize());
    TearDown(stream);
    printf("aclnn_norm: PASS\n");
    return 0;
}
