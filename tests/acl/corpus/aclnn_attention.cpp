/* aclnn FlashAttentionScore(V2) and FlashAttentionScoreGrad (BNSD, causal attention mask)
 * against a naive attention computed here: the output, the softmax statistics' shapes, and the
 * gradients of query, key and value; and the refusals (dropout, an unknown layout, nullptr). */
#include "aclnn_support.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"

static const int B = 1, N = 2, S = 5, D = 4;

/* Per head: P = softmax(scale * Q K^T + mask), O = P V and the gradients for dO. */
struct Reference {
    std::vector<float> out, dq, dk, dv;
};

static Reference Naive(const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                       const std::vector<float> &dout, double scale) {
    Reference r;
    r.out.assign(q.size(), 0);
    r.dq.assign(q.size(), 0);
    r.dk.assign(q.size(), 0);
    r.dv.assign(q.size(), 0);
    for (int h = 0; h < B * N; ++h) {
        const int base = h * S * D;
        std::vector<double> p(S * S, 0.0);
        for (int i = 0; i < S; ++i) {
            double peak = -1e30, sum = 0;
            for (int j = 0; j <= i; ++j) { /* causal: key j > i is masked out */
                double s = 0;
                for (int d = 0; d < D; ++d) s += q[base + i * D + d] * k[base + j * D + d];
                p[i * S + j] = s * scale;
                peak = std::fmax(peak, p[i * S + j]);
            }
            for (int j = 0; j <= i; ++j) sum += std::exp(p[i * S + j] - peak);
            for (int j = 0; j < S; ++j) p[i * S + j] = j <= i ? std::exp(p[i * S + j] - peak) / sum : 0.0;
        }
        for (int i = 0; i < S; ++i)
            for (int d = 0; d < D; ++d) {
                double o = 0;
                for (int j = 0; j < S; ++j) o += p[i * S + j] * v[base + j * D + d];
                r.out[base + i * D + d] = static_cast<float>(o);
            }
        /* dV = P^T dO; dP = dO V^T; dS = P (dP - rowsum(dP P)); dQ = scale dS K; dK = scale dS^T Q. */
        std::vector<double> dp(S * S, 0.0), ds(S * S, 0.0);
        for (int i = 0; i < S; ++i)
            for (int j = 0; j < S; ++j)
                for (int d = 0; d < D; ++d) dp[i * S + j] += dout[base + i * D + d] * v[base + j * D + d];
        for (int i = 0; i < S; ++i) {
            double row = 0;
            for (int j = 0; j < S; ++j) row += dp[i * S + j] * p[i * S + j];
            for (int j = 0; j < S; ++j) ds[i * S + j] = p[i * S + j] * (dp[i * S + j] - row);
        }
        for (int i = 0; i < S; ++i)
            for (int d = 0; d < D; ++d) {
                double gq = 0, gk = 0, gv = 0;
                for (int j = 0; j < S; ++j) {
                    gq += ds[i * S + j] * k[base + j * D + d];
                    gk += ds[j * S + i] * q[base + j * D + d];
                    gv += p[j * S + i] * dout[base + j * D + d];
                }
                r.dq[base + i * D + d] = static_cast<float>(gq * scale);
                r.dk[base + i * D + d] = static_cast<float>(gk * scale);
                r.dv[base + i * D + d] = static_cast<float>(gv);
            }
    }
    return r;
}

int main(void) {
    aclrtStream stream = SetUp();
    {
        const std::vector<int64_t> shape = {B, N, S, D}, stats = {B, N, S, 8};
        const double scale = 1.0 / std::sqrt(static_cast<double>(D));
        std::vector<float> q = TestValues(B * N * S * D, 61), k = TestValues(B * N * S * D, 62),
                           v = TestValues(B * N * S * D, 63), dy = TestValues(B * N * S * D, 64);
        std::vector<uint8_t> mask(S * S);
        for (int i = 0; i < S; ++i)
            for (int j = 0; j < S; ++j) mask[i * S + j] = j > i ? 1 : 0; /* 1: not attended */
        DeviceTensor<float> query(q, shape, ACL_FLOAT), key(k, shape, ACL_FLOAT), value(v, shape, ACL_FLOAT),
            grad(dy, shape, ACL_FLOAT);
        DeviceTensor<uint8_t> attenMask(mask, {S, S}, ACL_BOOL);
        DeviceTensor<float> out(shape, ACL_FLOAT), softmaxMax(stats, ACL_FLOAT), softmaxSum(stats, ACL_FLOAT);
        char layout[] = "BNSD";
        RUN_ACLNN(aclnnFlashAttentionScore, stream, query.tensor, key.tensor, value.tensor, nullptr, nullptr, nullptr,
                  attenMask.tensor, nullptr, scale, 1.0, 65536, 0, N, layout, 0, 0, softmaxMax.tensor,
                  softmaxSum.tensor, nullptr, out.tensor);
        const Reference r = Naive(q, k, v, dy, scale);
        ExpectClose("FlashAttentionScore", out.Read(), r.out, 1e-4, 1e-5);
        /* The row maximum of the scaled scores, on 8 lanes. */
        std::vector<float> maxima = softmaxMax.Read();
        for (int lane = 1; lane < 8; ++lane) EXPECT_TRUE(maxima[lane] == maxima[0]);

        DeviceTensor<float> dq(shape, ACL_FLOAT), dk(shape, ACL_FLOAT), dv(shape, ACL_FLOAT);
        RUN_ACLNN(aclnnFlashAttentionScoreGrad, stream, query.tensor, key.tensor, value.tensor, grad.tensor, nullptr,
                  nullptr, nullptr, attenMask.tensor, softmaxMax.tensor, softmaxSum.tensor, nullptr, out.tensor,
                  nullptr, scale, 1.0, 65536, 0, N, layout, 0, 0, dq.tensor, dk.tensor, dv.tensor, nullptr);
        ExpectClose("FlashAttentionScoreGrad dq", dq.Read(), r.dq, 1e-3, 1e-5);
        ExpectClose("FlashAttentionScoreGrad dk", dk.Read(), r.dk, 1e-3, 1e-5);
        ExpectClose("FlashAttentionScoreGrad dv", dv.Read(), r.dv, 1e-3, 1e-5);

        /* V2 with pseType 1 is the same computation; a pse generated inside (pseType 2) is refused. */
        int64_t zero = 0;
        aclIntArray *qStart = aclCreateIntArray(&zero, 1), *kvStart = aclCreateIntArray(&zero, 1);
        DeviceTensor<float> out2(shape, ACL_FLOAT);
        RUN_ACLNN(aclnnFlashAttentionScoreV2, stream, query.tensor, key.tensor, value.tensor, nullptr, nullptr, nullptr,
                  attenMask.tensor, nullptr, qStart, kvStart, scale, 1.0, 65536, 0, N, layout, 0, 0, 1,
                  softmaxMax.tensor, softmaxSum.tensor, nullptr, out2.tensor);
        ExpectClose("FlashAttentionScoreV2", out2.Read(), out.Read(), 0, 0);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnFlashAttentionScoreV2, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, qStart, kvStart, scale, 1.0, 65536, 0, N,
                         layout, 0, 0, 2, softmaxMax.tensor, softmaxSum.tensor, nullptr, out2.tensor);
        aclDestroyIntArray(qStart);
        aclDestroyIntArray(kvStart);

        /* Refusals: dropout, TND (the VarLen API's), no layout, no output, a wrong statistics shape. */
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnFlashAttentionScore, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, scale, 0.9, 65536, 0, N, layout, 0, 0,
                         softmaxMax.tensor, softmaxSum.tensor, nullptr, out.tensor);
        char tnd[] = "TND";
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnFlashAttentionScore, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, scale, 1.0, 65536, 0, N, tnd, 0, 0,
                         softmaxMax.tensor, softmaxSum.tensor, nullptr, out.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnFlashAttentionScore, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, scale, 1.0, 65536, 0, N, nullptr, 0, 0,
                         softmaxMax.tensor, softmaxSum.tensor, nullptr, out.tensor);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_NULLPTR, aclnnFlashAttentionScore, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, scale, 1.0, 65536, 0, N, layout, 0, 0,
                         softmaxMax.tensor, softmaxSum.tensor, nullptr, nullptr);
        DeviceTensor<float> narrow({B, N, S, 4}, ACL_FLOAT);
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnFlashAttentionScore, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, scale, 1.0, 65536, 0, N, layout, 0, 0,
                         narrow.tensor, softmaxSum.tensor, nullptr, out.tensor);
        /* headNum that does not match the layout's N. */
        EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnFlashAttentionScore, query.tensor, key.tensor, value.tensor,
                         nullptr, nullptr, nullptr, attenMask.tensor, nullptr, scale, 1.0, 65536, 0, 3, layout, 0, 0,
                         softmaxMax.tensor, softmaxSum.tensor, nullptr, out.tensor);
    }
    TearDown(stream);
    printf("aclnn_attention: PASS\n");
    return 0;
}
