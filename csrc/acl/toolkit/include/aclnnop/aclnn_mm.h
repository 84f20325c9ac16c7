/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_mm.h), written for npusim from CANN's public
 * documentation. Mm: out = self @ mat2 for 2-D matrices. cubeMathType: 0 KEEP_DTYPE, 1
 * ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3 USE_HF32, 4 USE_FP32_ADD.
 * Two phases: aclnnMmGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnMm runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_MM_H_
#define NPUSIM_ACLNNOP_ACLNN_MM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnMmGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
    int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnMm(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_MM_H_ */
