// Error codes and exceptions of the simulated CANN runtime.
//
// The numeric codes and their first-line texts are those of AscendCL (aclError,
// as tabulated in torch_npu's core/npu/NPUErrorCodes.h), so that a message shown
// by npusim reads like the one the real stack prints for the same mistake.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace npusim::runtime {

enum class ErrorCode : int32_t {
  kSuccess = 0,
  kInvalidParam = 100000,          // ACL_ERROR_INVALID_PARAM
  kUninitialized = 100001,         // ACL_ERROR_UNINITIALIZE
  kRepeatInitialize = 100002,      // ACL_ERROR_REPEAT_INITIALIZE
  kInvalidFile = 100003,           // ACL_ERROR_INVALID_FILE
  kParseFile = 100006,             // ACL_ERROR_PARSE_FILE
  kUnsupportedDataType = 100026,   // ACL_ERROR_UNSUPPORTED_DATA_TYPE
  kBadAlloc = 200000,              // ACL_ERROR_BAD_ALLOC
  kApiNotSupport = 200001,         // ACL_ERROR_API_NOT_SUPPORT
  kInvalidResourceHandle = 200005, // ACL_ERROR_INVALID_RESOURCE_HANDLE
  kFeatureUnsupported = 200006,    // ACL_ERROR_FEATURE_UNSUPPORTED
  kRtParamInvalid = 107000,        // ACL_ERROR_RT_PARAM_INVALID
  kRtInvalidDeviceId = 107001,     // ACL_ERROR_RT_INVALID_DEVICEID
  kRtContextNull = 107002,         // ACL_ERROR_RT_CONTEXT_NULL
  kRtStreamContext = 107003,       // ACL_ERROR_RT_STREAM_CONTEXT
  kRtEventTimestampInvalid = 107006,  // ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID
  kRtEventTimestampReversal = 107007, // ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL
  kRtMemoryAddressUnaligned = 107008, // ACL_ERROR_RT_MEMORY_ADDRESS_UNALIGNED
  kRtOpenFile = 107009,            // ACL_ERROR_RT_OPEN_FILE
  kRtWriteFile = 107010,           // ACL_ERROR_RT_WRITE_FILE
  kRtInvalidMemoryType = 107016,   // ACL_ERROR_RT_INVALID_MEMORY_TYPE
  kRtInvalidHandle = 107017,       // ACL_ERROR_RT_INVALID_HANDLE
  kRtWaitTimeout = 107019,         // ACL_ERROR_RT_WAIT_TIMEOUT
  kRtTaskTimeout = 107020,         // ACL_ERROR_RT_TASK_TIMEOUT
  kRtFeatureNotSupport = 207000,   // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
  kRtMemoryAllocation = 207001,    // ACL_ERROR_RT_MEMORY_ALLOCATION
  kRtMemoryFree = 207002,          // ACL_ERROR_RT_MEMORY_FREE
  kRtDeviceUnavailable = 207004,   // ACL_ERROR_RT_NO_DEVICE
  kRtNoPermission = 207006,        // ACL_ERROR_RT_NO_PERMISSION
  kRtNoEventResource = 207007,     // ACL_ERROR_RT_NO_EVENT_RESOURCE
  kRtNoStreamResource = 207008,    // ACL_ERROR_RT_NO_STREAM_RESOURCE
  kRtDeviceOom = 207018,           // ACL_ERROR_RT_DEVICE_OOM
  kInternalError = 500000,         // ACL_ERROR_INTERNAL_ERROR
  kFailure = 500001,               // ACL_ERROR_FAILURE
  kRtInternalError = 507000,       // ACL_ERROR_RT_INTERNAL_ERROR
  kRtEventNotComplete = 507006,    // ACL_ERROR_RT_EVENT_NOT_COMPLETE
  kRtAicpuException = 507018,      // ACL_ERROR_RT_AICPU_EXCEPTION
  kRtStreamSyncTimeout = 507046,   // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
  kRtEventSyncTimeout = 507047,    // ACL_ERROR_RT_EVENT_SYNC_TIMEOUT
  kRtDrvInternalError = 507899,    // ACL_ERROR_RT_DRV_INTERNAL_ERROR
};

// First line of the real stack's text for `code`, e.g. "Invalid device ID.".
// Unknown codes give "Unknown error code.".
const char* errorText(ErrorCode code) noexcept;

// What torch_npu's error table tells the user to check for `code` (its
// indented second line, e.g. "Check whether the device ID is valid."), or ""
// where the table has none.
const char* errorHint(ErrorCode code) noexcept;

// Thrown by every runtime entry point that rejects its arguments or cannot do
// its work. `call` names the API that failed (as the real stack prints it in
// "NPU function error: <call>, error code is <N>"), `detail` is the CANN-side
// explanation (the "EE1001 ..." part of a real message), which may be empty.
class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(ErrorCode code, std::string call, std::string detail = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  ErrorCode code_;
  std::string call_;
  std::string detail_;
};

// Thrown when a device allocation exceeds the simulated device's capacity.
// what() is the complete torch_npu text ("NPU out of memory. Tried to allocate
// ..."), ready to be raised as torch.OutOfMemoryError by the backend.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(int device, std::string message);
  int device() const noexcept { return device_; }

 private:
  int device_;
};

// Thrown by every device entry point in a child forked from a process whose
// devices were initialized: the child shares nothing with the parent's
// simulated devices and may not start its own (torch_npu's "bad fork").
class ForkedProcessError : public std::runtime_error {
 public:
  ForkedProcessError();
};

// Thrown for a malformed configuration value (an environment variable such as
// PYTORCH_NPU_ALLOC_CONF or ASCEND_GLOBAL_LOG_LEVEL). what() names the variable
// or key and says what is accepted.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace npusim::runtime
