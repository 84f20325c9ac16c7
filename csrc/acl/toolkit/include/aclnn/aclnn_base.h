/*
 * npusim's aclnn: initialisation of the single-operator API (CANN's aclnn/aclnn_base.h), and
 * every object of aclnn/acl_meta.h. aclInit initialises aclnn too; calling both is allowed.
 */
#ifndef NPUSIM_ACLNN_ACLNN_BASE_H_
#define NPUSIM_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* configPath names a JSON file (op_debug_config) or is NULL; npusim reads no setting from it but
 * requires it to be readable. Once per process. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACLNN_ACLNN_BASE_H_ */
