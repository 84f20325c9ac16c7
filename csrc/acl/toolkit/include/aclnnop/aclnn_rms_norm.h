/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_rms_norm.h), written for npusim from CANN's public
 * documentation. RmsNorm: yOut = x / sqrt(mean(x^2) + epsilon) * gamma over gamma's (trailing) dimensions;
 * rstdOut (FLOAT) the reciprocal RMS.
 * Two phases: aclnnRmsNormGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnRmsNorm runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_RMS_NORM_H_
#define NPUSIM_ACLNNOP_ACLNN_RMS_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma, double epsilon,
    const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnRmsNorm(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_RMS_NORM_H_ */
