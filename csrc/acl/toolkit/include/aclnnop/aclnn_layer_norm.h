/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_layer_norm.h), written for npusim from CANN's public
 * documentation. LayerNorm over the trailing normalizedShape dimensions, with optional weight and bias;
 * meanOutOptional and rstdOutOptional receive the statistics when given.
 * Two phases: aclnnLayerNormGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnLayerNorm runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_LAYER_NORM_H_
#define NPUSIM_ACLNNOP_ACLNN_LAYER_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnLayerNormGetWorkspaceSize(const aclTensor *input, const aclIntArray *normalizedShape,
    const aclTensor *weightOptional, const aclTensor *biasOptional, double eps, aclTensor *out,
    aclTensor *meanOutOptional, aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnLayerNorm(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_LAYER_NORM_H_ */
