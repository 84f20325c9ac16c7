/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_silu.h), written for npusim from CANN's public
 * documentation. Silu: out = self * sigmoid(self).
 * Two phases: aclnnSiluGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnSilu runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_SILU_H_
#define NPUSIM_ACLNNOP_ACLNN_SILU_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnSiluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnSilu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_SILU_H_ */
