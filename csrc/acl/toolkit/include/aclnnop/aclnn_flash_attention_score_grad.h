/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_flash_attention_score_grad.h), written for npusim
 * from CANN's public
 * documentation. FlashAttentionScoreGrad: the gradients of FlashAttentionScore from its softmax statistics.
 * Two phases: aclnnFlashAttentionScoreGradGetWorkspaceSize checks the arguments and returns the workspace
 * size and an
 * executor; aclnnFlashAttentionScoreGrad runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_GRAD_H_
#define NPUSIM_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_GRAD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(const aclTensor *query, const aclTensor *keyIn,
    const aclTensor *value, const aclTensor *dy, const aclTensor *pseShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional, const aclTensor *softmaxInOptional,
    const aclTensor *attentionInOptional, const aclIntArray *prefixOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dvOut,
    const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

/* V2: with pseType, as aclnnFlashAttentionScoreV2. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV2GetWorkspaceSize(const aclTensor *query, const aclTensor *keyIn,
    const aclTensor *value, const aclTensor *dy, const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional,
    const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional,
    const aclTensor *softmaxSumOptional, const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional,
    const aclIntArray *prefixOptional, const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor *dqOut, const aclTensor *dkOut,
    const aclTensor *dvOut, const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);
#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_GRAD_H_ */
