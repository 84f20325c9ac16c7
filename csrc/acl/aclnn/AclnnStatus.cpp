#include "acl/aclnn/AclnnStatus.h"

#include <new>

#include <c10/util/Exception.h>

#include "acl/runtime/InternalApi.h"

namespace npusim::aclnn {

void recordFailure(const char* api, aclnnStatus code, const std::string& detail) noexcept {
  npusimAclRecordFailure(api, code, detail.c_str());
}

namespace detail {

aclnnStatus translateCurrentException(const char* api) noexcept {
  aclnnStatus code = ACLNN_ERR_INNER;
  std::string text;
  try {
    throw;
  } catch (const AclnnFailure& failure) {
    code = failure.code();
    text = failure.what();
  } catch (const c10::OutOfMemoryError& error) {
    // The device's memory ran out while the kernel allocated: the runtime refused.
    code = ACLNN_ERR_RUNTIME_ERROR;
    text = error.what_without_backtrace();
  } catch (const c10::Error& error) {
    text = error.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    code = ACLNN_ERR_INNER;
    text = "the host is out of memory";
  } catch (const std::exception& error) {
    text = error.what();
  } catch (...) {
    text = "unknown exception";
  }
  try {
    recordFailure(api, code, text);
  } catch (...) {
  }
  return code;
}

}  // namespace detail
}  // namespace npusim::aclnn
