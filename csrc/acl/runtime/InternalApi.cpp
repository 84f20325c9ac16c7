// libascendcl's entry points for libopapi (InternalApi.h).
#include "acl/runtime/InternalApi.h"

#include <cstdio>
#include <memory>
#include <string>

#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"
#include "acl/runtime/ModelCapture.h"

namespace {

struct PayloadOwner {
  PayloadOwner(void* p, NpusimAclTaskRelease r) : payload(p), release(r) {}
  ~PayloadOwner() {
    if (owned) release(payload);
  }
  void* payload;
  NpusimAclTaskRelease release;
  bool owned = false;
};

void writeDetail(char* detail, size_t detailSize, const std::string& text) {
  if (detail != nullptr && detailSize > 0) std::snprintf(detail, detailSize, "%s", text.c_str());
}

}  // namespace

extern "C" {

aclError npusimAclResolveStream(aclrtStream stream, int32_t* device, uint64_t* timelineStream, char* detail,
                                size_t detailSize) {
  if (device == nullptr || timelineStream == nullptr) {
    writeDetail(detail, detailSize, "device and timelineStream must not be null");
    return ACL_ERROR_INVALID_PARAM;
  }
  try {
    const npusim::acl::ResolvedStream resolved = npusim::acl::resolveStream(stream);
    *device = resolved.device;
    *timelineStream = resolved.stream;
    return ACL_SUCCESS;
  } catch (const npusim::acl::AclFailure& failure) {
    writeDetail(detail, detailSize, failure.what());
    return failure.code();
  } catch (const std::exception& error) {
    writeDetail(detail, detailSize, error.what());
    return ACL_ERROR_RT_INTERNAL_ERROR;
  } catch (...) {
    writeDetail(detail, detailSize, "unknown exception");
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
}

aclError npusimAclCaptureTask(aclrtStream stream, const char* what, NpusimAclTaskRun run, NpusimAclTaskRelease release,
                              void* payload, int32_t* captured) {
  if (captured == nullptr || run == nullptr || release == nullptr) return ACL_ERROR_INVALID_PARAM;
  *captured = 0;
  try {
    const npusim::acl::ResolvedStream s = npusim::acl::resolveStream(stream);
    // Shared by every copy of the task, it releases the payload with the last one once the
    // model owns it; a task that was not recorded leaves the payload to the caller.
    auto owner = std::make_shared<PayloadOwner>(payload, release);
    npusim::acl::CapturedTask task{what != nullptr ? what : "aclnn",
                                   [owner, run](int device, npusim::runtime::StreamId replay, std::string& detail) {
                                     char text[512] = {};
                                     const aclError code = run(owner->payload, device, replay, text, sizeof text);
                                     detail = text;
                                     return code;
                                   }};
    if (npusim::acl::captureIfCapturing(s, std::move(task))) {
      owner->owned = true;
      *captured = 1;
    }
    return ACL_SUCCESS;
  } catch (const npusim::acl::AclFailure& failure) {
    return failure.code();
  } catch (...) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
}

void npusimAclRecordFailure(const char* api, aclError code, const char* detail) {
  npusim::acl::recordFailure(api != nullptr ? api : "aclnn", code, detail != nullptr ? detail : "");
}

}  // extern "C"
