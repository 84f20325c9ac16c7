/*
 * npusim's AscendCL: the umbrella header (CANN's acl/acl.h): process initialisation, versions
 * and the recent-error text, and every other acl header. Written for npusim from CANN's public
 * documentation; names, signatures and numbers are CANN's.
 */
#ifndef NPUSIM_ACL_ACL_H_
#define NPUSIM_ACL_ACL_H_

#include "acl_base.h"
#include "acl_mdl.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64

typedef enum aclCANNPackageName {
    ACL_PKG_NAME_CANN,
    ACL_PKG_NAME_RUNTIME,
    ACL_PKG_NAME_COMPILER,
    ACL_PKG_NAME_HCCL,
    ACL_PKG_NAME_TOOLKIT,
    ACL_PKG_NAME_OPP,
    ACL_PKG_NAME_OPP_KERNEL,
    ACL_PKG_NAME_DRIVER
} aclCANNPackageName;

typedef struct aclCANNPackageVersion {
    char version[ACL_PKG_VERSION_MAX_SIZE];
    char majorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char minorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char releaseVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char patchVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char reserved[ACL_PKG_VERSION_MAX_SIZE];
} aclCANNPackageVersion;

/* Initialises acl for the process. configPath names a JSON configuration file or is NULL/"";
 * npusim reads no setting from it but requires it to exist and be readable. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
ACL_FUNC_VISIBILITY aclError aclFinalizeReference(uint64_t *refCount);

/* The detailed text of the last error of this thread ("EE1001: ..." style), or NULL when the
 * thread has none; reading it clears it. */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

/* Versions of the simulated CANN packages. */
ACL_FUNC_VISIBILITY aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version);

#ifdef __cplusplus
}
#endif

#endif /* NPUSIM_ACL_ACL_H_ */
