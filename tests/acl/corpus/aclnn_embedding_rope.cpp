/* aclnn Embedding (INT64 and INT32 indices) and RotaryPositionEmbedding (half and interleave
 * modes, cos/sin broadcast over the heads) against references computed here; and the refusals
 * (Rope's shape and mode errors are ACLNN_ERR_INNER_TILING_ERROR). */
#include "aclnn_support.h"
#include "aclnnop/aclnn_embedding.h"
#include "aclnnop/aclnn_rotary_position_embedding.h"

static void Embedding(aclrtStream stream) {
    const int vocab = 6, width = 4;
    std::vector<float> w = TestValues(vocab * width, 51);
    DeviceTensor<float> weight(w, {vocab, width}, ACL_FLOAT);
    std::vector<int64_t> ids = {5, 0, 2, 2, 1, 4};
    DeviceTensor<int64_t> indices(ids, {2, 3}, ACL_INT64);
    DeviceTensor<float> out({2, 3, width}, ACL_FLOAT);
    RUN_ACLNN(aclnnEmbedding, stream, weight.tensor, indices.tensor, out.tensor);
    std::vector<float> expected;
    for (int64_t id : ids)
        for (int c = 0; c < width; ++c) expected.push_back(w[id * width + c]);
    ExpectClose("Embedding", out.Read(), expected, 0, 0);
    std::vector<int32_t> ids32 = {3, 1};
    DeviceTensor<int32_t> indices32(ids32, {2}, ACL_INT32);
    DeviceTensor<float> out2({2, width}, ACL_FLOAT);
    RUN_ACLNN(aclnnEmbedding, stream, weight.tensor, indices32.tensor, out2.tensor);
    std::vector<float> expected2(w.begin() + 3 * width, w.begin() + 4 * width);
    expected2.insert(expected2.end(), w.begin() + width, w.begin() + 2 * width);
    ExpectClose("Embedding int32", out2.Read(), expected2, 0, 0);
    DeviceTensor<float> wrong({2, 3, width + 1}, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnEmbedding, weight.tensor, indices.tensor, wrong.tensor);
    DeviceTensor<float> floatIds({2, 3}, ACL_FLOAT);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnEmbedding, weight.tensor, floatIds.tensor, out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnEmbedding, weight.tensor, nullptr, out.tensor);
}

/* x [B, S, N, D]; cos/sin [1, S, 1, D]. */
static void Rope(aclrtStream stream, int64_t mode) {
    const int B = 2, S = 3, N = 2, D = 8;
    std::vector<float> x = TestValues(B * S * N * D, 52 + static_cast<unsigned>(mode));
    std::vector<float> cosValues(S * D), sinValues(S * D);
    for (int s = 0; s < S; ++s)
        for (int d = 0; d < D; ++d) {
            double angle = (s + 1) * 0.3 * (d % (D / 2) + 1);
            cosValues[s * D + d] = static_cast<float>(std::cos(angle));
            sinValues[s * D + d] = static_cast<float>(std::sin(angle));
        }
    DeviceTensor<float> input(x, {B, S, N, D}, ACL_FLOAT), cos(cosValues, {1, S, 1, D}, ACL_FLOAT),
        sin(sinValues, {1, S, 1, D}, ACL_FLOAT), out({B, S, N, D}, ACL_FLOAT);
    RUN_ACLNN(aclnnRotaryPositionEmbedding, stream, input.tensor, cos.tensor, sin.tensor, mode, out.tensor);
    std::vector<float> expected(x.size());
    for (int b = 0; b < B; ++b)
        for (int s = 0; s < S; ++s)
            for (int n = 0; n < N; ++n) {
                const float *row = &x[((b * S + s) * N + n) * D];
                for (int d = 0; d < D; ++d) {
                    float rotated;
                    if (mode == 0) { /* half: cat(-x2, x1) */
                        rotated = d < D / 2 ? -row[d + D / 2] : row[d - D / 2];
                    } else { /* interleave: pairs (x0, x1) -> (-x1, x0) */
                        rotated = d % 2 == 0 ? -row[d + 1] : row[d - 1];
                    }
                    expected[((b * S + s) * N + n) * D + d] = row[d] * cosValues[s * D + d] + rotated * sinValues[s * D + d];
                }
            }
    ExpectClose(mode == 0 ? "Rope half" : "Rope interleave", out.Read(), expected, 1e-5, 1e-6);
}

static void RopeRefusals(void) {
    DeviceTensor<float> x({2, 3, 2, 8}, ACL_FLOAT), cos({1, 3, 1, 8}, ACL_FLOAT), out({2, 3, 2, 8}, ACL_FLOAT);
    DeviceTensor<float> other({2, 3, 2, 4}, ACL_FLOAT), three({3, 1, 8}, ACL_FLOAT);
    DeviceTensor<aclFloat16> half({2, 3, 2, 8}, ACL_FLOAT16);
    EXPECT_PHASE_ONE(ACLNN_ERR_INNER_TILING_ERROR, aclnnRotaryPositionEmbedding, x.tensor, cos.tensor, cos.tensor, 2,
                     out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_INNER_TILING_ERROR, aclnnRotaryPositionEmbedding, x.tensor, cos.tensor, cos.tensor, 0,
                     other.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnRotaryPositionEmbedding, x.tensor, three.tensor, three.tensor, 0,
                     out.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnRotaryPositionEmbedding, x.tensor, cos.tensor, cos.tensor, 0,
                     half.tensor);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnRotaryPositionEmbedding, x.tensor, nullptr, cos.tensor, 0, out.tensor);
}

int main(void) {
    aclrtStream stream = SetUp();
    Embedding(stream);
    Rope(stream, 0);
    Rope(stream, 1);
    RopeRefusals();
    TearDown(stream);
    printf("aclnn_embedding_rope: PASS\n");
    return 0;
}
