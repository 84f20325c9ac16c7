/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_cast.h), written for npusim from CANN's public
 * documentation. Cast: out = self converted to dtype (out's data type).
 * Two phases: aclnnCastGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnCast runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_CAST_H_
#define NPUSIM_ACLNNOP_ACLNN_CAST_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnCast(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_CAST_H_ */
