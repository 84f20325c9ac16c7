/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_gelu.h), written for npusim from CANN's public
 * documentation. Gelu, the tanh form: out = 0.5 * self * (1 + tanh(sqrt(2 / pi) * (self + 0.044715 *
 * self^3))).
 * Two phases: aclnnGeluGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnGelu runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_GELU_H_
#define NPUSIM_ACLNNOP_ACLNN_GELU_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnGeluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnGelu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_GELU_H_ */
