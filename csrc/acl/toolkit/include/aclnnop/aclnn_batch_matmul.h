/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_batch_matmul.h), written for npusim from CANN's public
 * documentation. BatchMatMul: out[b] = self[b] @ mat2[b] for 3-D operands. cubeMathType as aclnnMm.
 * Two phases: aclnnBatchMatMulGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnBatchMatMul runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_BATCH_MATMUL_H_
#define NPUSIM_ACLNNOP_ACLNN_BATCH_MATMUL_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnBatchMatMulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
    int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchMatMul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_BATCH_MATMUL_H_ */
