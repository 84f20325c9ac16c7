// torch_npu-style errors for failures of the simulated runtime.
//
// torch_npu appends a suffix to its exception messages (torch_npu/utils/
// _error_code.py): "\n[ERROR] <time> (PID:<pid>, Device:<d>, RankID:<r>)
// ERR<module><code> <MODULE> <text>". npusim does the same, so a user's logs
// and error-matching code see the real format.
#pragma once

#include <exception>
#include <string>

namespace npusim::backend {

enum class ErrorModule { kPta = 0, kOps = 1, kDist = 2, kGraph = 3, kProf = 4, kUnknown = 99 };

enum class ErrorKind {
  kInvalidParameter = 1,
  kInvalidType = 2,
  kInvalidValue = 3,
  kInvalidPointer = 4,
  kInternalError = 5,
  kMemoryError = 6,
  kFeatureNotSupported = 7,
  kResourceNotFound = 8,
  kResourceUnavailable = 9,
  kSystemCallFailed = 10,
  kTimeout = 11,
  kPermissionError = 12,
  kAclCallFailed = 100,
  kHcclCallFailed = 200,
  kGeCallFailed = 300,
  kApplicationException = 999,
};

// "\n[ERROR] 2026-11-29-14:20:01 (PID:123, Device:0, RankID:-1) ERR00100 PTA call acl api failed",
// or "" when the suffix is switched off (interactive interpreter).
std::string errorSuffix(ErrorModule module, ErrorKind kind);

// torch_npu's error for a CPU tensor (not a 0-dim scalar) among an npu
// operator's tensors: op-plugin's conversion of aclnn arguments refuses it
// with "Expected all tensors to be on the same device. Expected NPU tensor,
// ..." (OPS, invalid type).
[[noreturn]] void throwExpectedNpuTensor();

// The Python face tells the backend whether it runs in an interactive
// interpreter, where torch_npu leaves the suffix out.
void setInteractiveSession(bool interactive);

// Rethrows the exception in flight as the c10 error PyTorch expects:
// runtime::OutOfMemoryError -> c10::OutOfMemoryError (torch.OutOfMemoryError),
// runtime::RuntimeError and runtime::ConfigError -> c10::Error with the
// torch_npu suffix; anything else unchanged.
[[noreturn]] void rethrowAsTorchError();

}  // namespace npusim::backend

// Wraps a block that calls the runtime so that its errors reach the user as
// torch_npu's would.
#define NPUSIM_TRANSLATE_ERRORS(...)            \
  do {                                          \
    try {                                       \
      __VA_ARGS__;                              \
    } catch (...) {                             \
      ::npusim::backend::rethrowAsTorchError(); \
    }                                           \
  } while (false)
