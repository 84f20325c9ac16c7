/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_softmax.h), written for npusim from CANN's public
 * documentation. Softmax of self along dim.
 * Two phases: aclnnSoftmaxGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnSoftmax runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_SOFTMAX_H_
#define NPUSIM_ACLNNOP_ACLNN_SOFTMAX_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnSoftmax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_SOFTMAX_H_ */
