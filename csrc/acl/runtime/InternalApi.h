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

// A task libopapi hands over for stream capture: `run` executes it on (device, stream) as
// launched by the device, returning ACL_SUCCESS or an error with its reason in `detail`;
// `release` frees `payload`.
typedef aclError (*NpusimAclTaskRun)(void *payload, int32_t device, uint64_t timelineStream, char *detail,
                                     size_t detailSize);
typedef void (*NpusimAclTaskRelease)(void *payload);

// When `stream` is capturing (aclmdlRICaptureBegin), records the task `what` and sets
// *captured to 1: the model owns `payload` from then on. Otherwise sets *captured to 0 and
// leaves `payload` to the caller, who runs the work itself.
ACL_FUNC_VISIBILITY aclError npusimAclCaptureTask(aclrtStream stream, const char *what, NpusimAclTaskRun run,
                                                  NpusimAclTaskRelease release, void *payload, int32_t *captured);

// Records a failure of `api` for the calling thread as every acl call does: a plog line (module
// OP for the aclnn codes 161xxx/361xxx/561xxx), aclGetRecentErrMsg's text and the last error.
ACL_FUNC_VISIBILITY void npusimAclRecordFailure(const char *api, aclError code, const char *detail);

#ifdef __cplusplus
}
#endif
