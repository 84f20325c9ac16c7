/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_mean.h), written for npusim from CANN's public
 * documentation. Mean: the mean of self over dim, computed in dtype.
 * Two phases: aclnnMeanGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnMean runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_MEAN_H_
#define NPUSIM_ACLNNOP_ACLNN_MEAN_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnMeanGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim,
    aclDataType dtype, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnMean(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_MEAN_H_ */
