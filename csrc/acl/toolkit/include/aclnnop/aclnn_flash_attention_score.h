/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_flash_attention_score.h), written for npusim from
 * CANN's public
 * documentation. FlashAttentionScore: the training FlashAttention forward (layouts BSH, SBH, BSND, BNSD;
 * sparse modes 0-6; GQA), with the softmax statistics its backward reads.
 * Two phases: aclnnFlashAttentionScoreGetWorkspaceSize checks the arguments and returns the workspace size
 * and an
 * executor; aclnnFlashAttentionScore runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_
#define NPUSIM_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(const aclTensor *query, const aclTensor *key,
    const aclTensor *value, const aclTensor *realShiftOptional, const aclTensor *dropMaskOptional,
    const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional, const aclIntArray *prefixOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut,
    const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnFlashAttentionScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

/* V2: pseType 1 is the computation above; 0 without a pse likewise (npusim refuses an external pse
 * multiplied first, and the internally generated pse of 2 and 3). */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(const aclTensor *query, const aclTensor *key,
    const aclTensor *value, const aclTensor *realShiftOptional, const aclTensor *dropMaskOptional,
    const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional, const aclIntArray *prefixOptional,
    const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise,
    int64_t sparseMode, int64_t pseType, const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut,
    const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnFlashAttentionScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);
#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_ */
