// How every aclnn entry point of libopapi reports failure: CANN's status code (161001 a null
// argument, 161002 an invalid one, 361001 the runtime refused, 561xxx an inner error), a plog
// line under module OP and the thread's aclGetRecentErrMsg text (both kept by libascendcl, so
// that the acl and aclnn faces share one recent error).
//
// Entry points run their body inside callAclnn("aclnnXxx", ...): the body throws AclnnFailure
// for what it rejects; anything else thrown (a PyTorch error from a kernel, host out of memory)
// becomes an inner error. No C++ exception crosses the C boundary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "aclnn/acl_meta.h"

namespace npusim::aclnn {

class AclnnFailure : public std::runtime_error {
 public:
  AclnnFailure(aclnnStatus code, std::string detail) : std::runtime_error(std::move(detail)), code_(code) {}
  aclnnStatus code() const noexcept { return code_; }

 private:
  aclnnStatus code_;
};

// Throws ACLNN_ERR_PARAM_NULLPTR naming `what` when `pointer` is null.
inline void requireArgument(const void* pointer, const char* what) {
  if (pointer == nullptr) throw AclnnFailure(ACLNN_ERR_PARAM_NULLPTR, std::string(what) + " must not be nullptr");
}

// Throws ACLNN_ERR_PARAM_INVALID with `detail` unless `condition`.
inline void requireValid(bool condition, const std::string& detail) {
  if (!condition) throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, detail);
}

// Records a failure of `api` for the calling thread (plog, recent error message).
void recordFailure(const char* api, aclnnStatus code, const std::string& detail) noexcept;

namespace detail {
aclnnStatus translateCurrentException(const char* api) noexcept;
}  // namespace detail

template <typename Body>
aclnnStatus callAclnn(const char* api, Body&& body) noexcept {
  try {
    body();
    return ACLNN_SUCCESS;
  } catch (...) {
    return detail::translateCurrentException(api);
  }
}

// The same for the create calls, which return a pointer (nullptr on failure).
template <typename Result, typename Body>
Result* createOrNull(const char* api, Body&& body) noexcept {
  Result* result = nullptr;
  callAclnn(api, [&] { result = body(); });
  return result;
}

}  // namespace npusim::aclnn
