// How every AscendCL entry point of libascendcl reports failure: a return code, CANN's, a plog
// line as the real runtime writes one, and the thread's "recent error message"
// (aclGetRecentErrMsg) and last error (aclrtGetLastError).
//
// Entry points run their body inside callAcl("aclrtXxx", ...): the body throws AclFailure
// for a rejected argument or state, and the runtime's own exceptions (RuntimeError with its
// code, OutOfMemoryError, ConfigError, ForkedProcessError) are translated here, so that no C++
// exception ever crosses the C boundary.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "acl/acl_base.h"

namespace npusim::acl {

// A rejected call: `code` is returned, `detail` says why (in the plog and the recent error
// message).
class AclFailure : public std::runtime_error {
 public:
  AclFailure(aclError code, std::string detail) : std::runtime_error(std::move(detail)), code_(code) {}
  aclError code() const noexcept { return code_; }

 private:
  aclError code_;
};

// Records a failure of `api` for the calling thread (plog, recent message, last error).
void recordFailure(const char* api, aclError code, const std::string& detail) noexcept;

// The body's code (ACL_SUCCESS or an AclFailure's), never an exception.
template <typename Body>
aclError callAcl(const char* api, Body&& body) noexcept;

// The thread's last error (aclrtPeekAtLastError); `clear` resets it (aclrtGetLastError).
aclError lastError(bool clear) noexcept;
// The thread's recent error text, or nullptr; reading it clears it.
const char* takeRecentErrorMessage() noexcept;

// Throws AclFailure(ACL_ERROR_INVALID_PARAM) naming `what` when `pointer` is null.
inline void requireNotNull(const void* pointer, const char* what) {
  if (pointer == nullptr) throw AclFailure(ACL_ERROR_INVALID_PARAM, std::string(what) + " must not be null");
}

// The integer a C caller passed for an enum parameter. C may pass any int (42 as an
// aclrtMemcpyKind); reading such a value as the C++ enum is undefined, so entry points copy
// its bytes and validate the integer.
template <typename Enum>
int32_t enumValue(const Enum& value) noexcept {
  static_assert(sizeof(Enum) == sizeof(int32_t), "acl enums are 32-bit");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

namespace detail {
aclError translateCurrentException(const char* api) noexcept;
}  // namespace detail

template <typename Body>
aclError callAcl(const char* api, Body&& body) noexcept {
  try {
    body();
    return ACL_SUCCESS;
  } catch (...) {
    return detail::translateCurrentException(api);
  }
}

}  // namespace npusim::acl
