#include "acl/runtime/AclErrors.h"

#include <unistd.h>

#include <new>

#include "runtime/Error.h"
#include "runtime/Plog.h"

namespace npusim::acl {
namespace {

thread_local aclError tlsLastError = ACL_SUCCESS;
thread_local std::string tlsRecentMessage;
thread_local bool tlsRecentPending = false;
// The buffer aclGetRecentErrMsg hands out: valid until the thread's next call.
thread_local std::string tlsHandedOut;

// The aclnn operators' status codes (libopapi): 161xxx parameter, 361xxx runtime, 561xxx inner.
bool isAclnnCode(aclError code) noexcept {
  return (code >= 161000 && code < 162000) || (code >= 361000 && code < 362000) || (code >= 561000 && code < 562000);
}

// Parameter checks of the acl layer log as ASCENDCL; what the runtime rejects, as RUNTIME; the
// aclnn operators, as OP (the module of CANN's operator library).
const char* moduleOf(aclError code) noexcept {
  if (isAclnnCode(code)) return "OP";
  return (code >= 100000 && code < 107000) || (code >= 200000 && code < 207000) || code == 500000 ||
                 code == 500001
             ? "ASCENDCL"
             : "RUNTIME";
}

// The error id that starts the recent-error text: EZ1001 for a parameter an operator rejects,
// EZ9999 for an operator's inner error, EE1001 for the runtime's.
const char* errorIdOf(aclError code) noexcept {
  if (code >= 161000 && code < 162000) return "EZ1001";
  if (isAclnnCode(code)) return "EZ9999";
  return "EE1001";
}

}  // namespace

void recordFailure(const char* api, aclError code, const std::string& detail) noexcept {
  try {
    tlsLastError = code;
    // The real stack's recent-error text starts with an error id and the pid; the detail of a
    // runtime error already carries its own "EE...: [PID: n]" prefix.
    if (detail.rfind("E", 0) == 0 && detail.find(": [PID: ") != std::string::npos) {
      tlsRecentMessage = detail;
    } else {
      tlsRecentMessage = std::string(errorIdOf(code)) + ": [PID: " + std::to_string(::getpid()) + "] " + api +
                         " failed: " + detail;
    }
    tlsRecentPending = true;
    NPUSIM_PLOG(runtime::LogLevel::kError, moduleOf(code),
                std::string(api) + ": " + detail + " [ErrorCode=" + std::to_string(code) + "]");
  } catch (...) {
    // Out of memory while describing a failure: the code is still returned.
  }
}

aclError lastError(bool clear) noexcept {
  const aclError code = tlsLastError;
  if (clear) tlsLastError = ACL_SUCCESS;
  return code;
}

const char* takeRecentErrorMessage() noexcept {
  if (!tlsRecentPending) return nullptr;
  tlsRecentPending = false;
  tlsHandedOut.swap(tlsRecentMessage);
  tlsRecentMessage.clear();
  return tlsHandedOut.c_str();
}

namespace detail {

aclError translateCurrentException(const char* api) noexcept {
  aclError code = ACL_ERROR_INTERNAL_ERROR;
  std::string detail;
  try {
    throw;
  } catch (const AclFailure& failure) {
    code = failure.code();
    detail = failure.what();
  } catch (const runtime::RuntimeError& error) {
    code = static_cast<aclError>(error.code());
    detail = error.detail().empty() ? runtime::errorText(error.code()) : error.detail();
  } catch (const runtime::OutOfMemoryError& error) {
    code = ACL_ERROR_RT_MEMORY_ALLOCATION;
    detail = error.what();
  } catch (const runtime::ConfigError& error) {
    // A malformed environment variable (NPUSIM_SOC, ASCEND_GLOBAL_LOG_LEVEL, ...) read when the
    // runtime starts: the call cannot proceed until it is fixed.
    code = ACL_ERROR_INVALID_PARAM;
    detail = error.what();
  } catch (const runtime::ForkedProcessError& error) {
    code = ACL_ERROR_RT_INTERNAL_ERROR;
    detail = error.what();
  } catch (const std::bad_alloc&) {
    code = ACL_ERROR_BAD_ALLOC;
    detail = "the host is out of memory";
  } catch (const std::exception& error) {
    detail = error.what();
  } catch (...) {
    detail = "unknown exception";
  }
  recordFailure(api, code, detail);
  return code;
}

}  // namespace detail
}  // namespace npusim::acl
