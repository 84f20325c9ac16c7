// libascendcl's entry points for libopapi (InternalApi.h).
#include "acl/runtime/InternalApi.h"

#include <cstdio>
#include <string>

#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"

namespace {

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

void npusimAclRecordFailure(const char* api, aclError code, const char* detail) {
  npusim::acl::recordFailure(api != nullptr ? api : "aclnn", code, detail != nullptr ? detail : "");
}

}  // extern "C"
