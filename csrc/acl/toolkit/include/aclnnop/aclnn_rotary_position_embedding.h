/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_rotary_position_embedding.h), written for npusim
 * from CANN's public
 * documentation. RotaryPositionEmbedding: out = x * cos + rotate(x) * sin on 4-D x; mode 0 half
 * (rotate_half), 1 interleave.
 * Two phases: aclnnRotaryPositionEmbeddingGetWorkspaceSize checks the arguments and returns the workspace
 * size and an
 * executor; aclnnRotaryPositionEmbedding runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_ROTARY_POSITION_EMBEDDING_H_
#define NPUSIM_ACLNNOP_ACLNN_ROTARY_POSITION_EMBEDDING_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor *x, const aclTensor *cos,
    const aclTensor *sin, int64_t mode, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnRotaryPositionEmbedding(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_ROTARY_POSITION_EMBEDDING_H_ */
