/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_matmul.h), written for npusim from CANN's public
 * documentation. Matmul: out = self @ mat2 for 1-D to 6-D operands, broadcasting the batch dimensions
 * (torch.matmul). cubeMathType as aclnnMm.
 * Two phases: aclnnMatmulGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnMatmul runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_MATMUL_H_
#define NPUSIM_ACLNNOP_ACLNN_MATMUL_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
    int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnMatmul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_MATMUL_H_ */
