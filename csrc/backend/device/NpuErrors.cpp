#include "backend/device/NpuErrors.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <c10/util/Exception.h>

#include "runtime/Error.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

std::atomic<bool> interactiveSession{false};

const char* moduleName(ErrorModule module) {
  switch (module) {
    case ErrorModule::kPta: return "PTA";
    case ErrorModule::kOps: return "OPS";
    case ErrorModule::kDist: return "DIST";
    case ErrorModule::kGraph: return "GRAPH";
    case ErrorModule::kProf: return "PROF";
    case ErrorModule::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

const char* kindText(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidParameter: return "invalid parameter";
    case ErrorKind::kInvalidType: return "invalid type";
    case ErrorKind::kInvalidValue: return "invalid value";
    case ErrorKind::kInvalidPointer: return "invalid pointer";
    case ErrorKind::kInternalError: return "internal error";
    case ErrorKind::kMemoryError: return "memory error";
    case ErrorKind::kFeatureNotSupported: return "feature not supported";
    case ErrorKind::kResourceNotFound: return "resource not found";
    case ErrorKind::kResourceUnavailable: return "resource unavailable";
    case ErrorKind::kSystemCallFailed: return "system call failed";
    case ErrorKind::kTimeout: return "timeout error";
    case ErrorKind::kPermissionError: return "permission error";
    case ErrorKind::kAclCallFailed: return "call acl api failed";
    case ErrorKind::kHcclCallFailed: return "call hccl api failed";
    case ErrorKind::kGeCallFailed: return "call ge api failed";
    case ErrorKind::kApplicationException: return "application exception";
  }
  return "application exception";
}

int rankId() {
  const char* rank = std::getenv("RANK");
  return rank != nullptr && *rank != '\0' ? std::atoi(rank) : -1;
}

bool compactErrorOutput() {
  static const bool compact = [] {
    const char* value = std::getenv("TORCH_NPU_COMPACT_ERROR_OUTPUT");
    return value != nullptr && std::string(value) == "1";
  }();
  return compact;
}

// "EE1001: [PID: 7] The argument is invalid.Reason: ..." -> "The argument is invalid.Reason: ...";
// without a CANN detail, the ACL text.
std::string compactReason(const runtime::RuntimeError& e) {
  const std::string& detail = e.detail();
  const size_t bracket = detail.find("] ");
  if (detail.rfind("E", 0) == 0 && bracket != std::string::npos) return detail.substr(bracket + 2);
  return runtime::errorText(e.code());
}

}  // namespace

void setInteractiveSession(bool interactive) { interactiveSession.store(interactive); }

std::string errorSuffix(ErrorModule module, ErrorKind kind) {
  if (interactiveSession.load()) return {};
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(when, sizeof when, "%Y-%m-%d-%H:%M:%S", &local);
  char text[256];
  std::snprintf(text, sizeof text, "\n[ERROR] %s (PID:%d, Device:%d, RankID:%d) ERR%02d%03d %s %s", when,
                static_cast<int>(::getpid()), runtime::Runtime::currentDevice(), rankId(),
                static_cast<int>(module), static_cast<int>(kind), moduleName(module), kindText(kind));
  return text;
}

void throwExpectedNpuTensor() {
  TORCH_CHECK(false,
              "Expected all tensors to be on the same device. Expected NPU tensor, please check whether the input "
              "tensor device is correct.",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidType));
}

void rethrowAsTorchError() {
  try {
    throw;
  } catch (const runtime::OutOfMemoryError& e) {
    NPUSIM_PLOG(runtime::LogLevel::kError, "APP", std::string("[PTA]:") + e.what());
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  } catch (const runtime::RuntimeError& e) {
    const std::string suffix = errorSuffix(ErrorModule::kPta, ErrorKind::kAclCallFailed);
    NPUSIM_PLOG(runtime::LogLevel::kError, "APP", std::string("[PTA]:") + e.what() + suffix);
    if (compactErrorOutput()) {
      // TORCH_NPU_COMPACT_ERROR_OUTPUT=1: one short line; the detail went to the plog.
      TORCH_CHECK(false, "CANN error: ", compactReason(e));
    }
    TORCH_CHECK(false, e.what(), suffix);
  } catch (const runtime::ForkedProcessError& e) {
    TORCH_CHECK(false, e.what(), errorSuffix(ErrorModule::kPta, ErrorKind::kResourceUnavailable));
  } catch (const runtime::ConfigError& e) {
    NPUSIM_PLOG(runtime::LogLevel::kError, "APP", std::string("[PTA]:") + e.what());
    TORCH_CHECK(false, e.what(), errorSuffix(ErrorModule::kPta, ErrorKind::kInvalidValue));
  }
}

}  // namespace npusim::backend
