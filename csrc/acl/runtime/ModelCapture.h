// Stream capture into a model runtime instance (aclmdlRI, CANN's "aclgraph"): between
// aclmdlRICaptureBegin and aclmdlRICaptureEnd the work queued on the stream is recorded, not
// run; each aclmdlRIExecuteAsync runs the recorded tasks again on the memory they were given,
// as NPUGraph replays captured kernels. The timeline prices an execution as the chip runs it:
// one model launch from the host, then each task's device time with no per-task dispatch.
//
// npusim captures what moves data or computes: aclrtMemcpyAsync, aclrtMemcpy2dAsync,
// aclrtMemsetAsync and the aclnn operators (libopapi hands its launches over through
// InternalApi.h). Event records and waits and host callbacks on a capturing stream are refused
// (ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT), and so are the calls the capture mode forbids: the
// synchronous copies and memsets, copies from pageable host memory and device synchronisation
// while a GLOBAL capture runs anywhere, or a THREAD_LOCAL one on the calling thread.
#pragma once

#include <functional>
#include <string>

#include "acl/acl_base.h"
#include "acl/runtime/AclHandles.h"

namespace npusim::acl {

// A recorded task. `run` executes it on `stream` of `device` as launched by the device (no host
// dispatch); it returns ACL_SUCCESS, or an error with its reason in `detail`.
struct CapturedTask {
  std::string what;  // the call that queued it: "aclrtMemcpyAsync", "aclnnAdd"
  std::function<aclError(int device, runtime::StreamId stream, std::string& detail)> run;
};

// When `s` is capturing, records `task` and returns true; else false (the caller runs it).
bool captureIfCapturing(const ResolvedStream& s, CapturedTask task);

// Refuses (ACL_ERROR_RT_STREAM_CAPTURED) to wait for or query a capturing stream: its work has
// not run.
void requireNotCapturing(const ResolvedStream& s, const char* what);

// Refuses (ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT) work npusim does not capture, queued on a
// capturing stream.
void refuseOnCapturingStream(const ResolvedStream& s, const char* what);

// Refuses (ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT) a call the running captures' modes forbid.
void requireUnsafeCallAllowed(const char* what);

// Ends, unrecorded, the capture of a stream that is destroyed, or every capture of a device
// that is reset.
void discardCapture(int device, runtime::StreamId stream);
void discardDeviceCaptures(int device);

}  // namespace npusim::acl
