/*
 * npusim's aclnn operator header (CANN's aclnnop/aclnn_embedding.h), written for npusim from CANN's public
 * documentation. Embedding: out = weight[indices] (rows of the 2-D weight).
 * Two phases: aclnnEmbeddingGetWorkspaceSize checks the arguments and returns the workspace size and an
 * executor; aclnnEmbedding runs that executor on a stream.
 */
#ifndef NPUSIM_ACLNNOP_ACLNN_EMBEDDING_H_
#define NPUSIM_ACLNNOP_ACLNN_EMBEDDING_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnEmbeddingGetWorkspaceSize(const aclTensor *weight, const aclTensor *indices,
    const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnEmbedding(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_EMBEDDING_H_ */
