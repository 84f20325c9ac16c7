// The entry points that libopapi (csrc/acl/aclnn, the aclnn operators) needs from libascendcl
// besides CANN's API: the process has one acl state (streams, the thread's recent error), and
// libascendcl owns it. They are exported with C linkage under npusim's own prefix; no CANN
// header declares them and programs never call them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

// The device and timeline stream behind `stream` (null: the current context's default stream;
// a created stream; or a PyTorch stream id). Returns ACL_SUCCESS, or the code aclrtXxx calls
// would return for that handle, with the reason in `detail` (NUL-terminated, at most
// `detailSize` bytes). Records nothing: the caller reports the failure as its own.
ACL_FUNC_VISIBILITY aclError npusimAclResolveStream(aclrtStream stream, int32_t *device, uint64_t *timelineStream,
                                                    char *detail, size_t detailSize);

// Records a failure of `api` for the calling thread as every acl call does: a plog line (module
// OP for the aclnn codes 161xxx/361xxx/561xxx), aclGetRecentErrMsg's text and the last error.
ACL_FUNC_VISIBILITY void npusimAclRecordFailure(const char *api, aclError code, const char *detail);

#ifdef __cplusplus
}
#endif
