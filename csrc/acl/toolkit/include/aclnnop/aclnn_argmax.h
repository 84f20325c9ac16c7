/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_argmax.h), written for npusim from CANN's public
 * documentation. ArgMax: the index of the largest element of self along dim (out INT64 or INT32).
 * Two phases: aclnnArgMaxGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnArgMax runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_ARGMAX_H_
#define NPUSIM_ACLNNOP_ACLNN_ARGMAX_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnArgMaxGetWorkspaceSize(const aclTensor *self, int64_t dim, bool keepdim, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnArgMax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_ARGMAX_H_ */
