/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_reduce_sum.h), written for npusim from CANN's public
 * documentation. ReduceSum: the sum of self over dims, in dtype (out's data type).
 * Two phases: aclnnReduceSumGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnReduceSum runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_REDUCE_SUM_H_
#define NPUSIM_ACLNNOP_ACLNN_REDUCE_SUM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self, const aclIntArray *dims, bool keepDims,
    aclDataType dtype, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnReduceSum(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_REDUCE_SUM_H_ */
