#include "runtime/Error.h"

#include <utility>

namespace npusim::runtime {

const char* errorText(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kSuccess: return "Success.";
    case ErrorCode::kInvalidParam: return "Parameter verification failed.";
    case ErrorCode::kUninitialized: return "ACL uninitialized.";
    case ErrorCode::kRepeatInitialize: return "Repeated initialization or repeated loading.";
    case ErrorCode::kInvalidFile: return "Invalid file.";
    case ErrorCode::kParseFile: return "Failed to parse the file.";
    case ErrorCode::kUnsupportedDataType: return "Unsupported data type.";
    case ErrorCode::kBadAlloc: return "Failed to apply for memory.";
    case ErrorCode::kApiNotSupport: return "The interface does not support this function.";
    case ErrorCode::kInvalidResourceHandle: return "Invalid resource handle.";
    case ErrorCode::kFeatureUnsupported: return "This feature is not supported.";
    case ErrorCode::kRtParamInvalid: return "Parameter verification failed.";
    case ErrorCode::kRtInvalidDeviceId: return "Invalid device ID.";
    case ErrorCode::kRtContextNull: return "The context is empty.";
    case ErrorCode::kRtStreamContext: return "The stream is not in the current context.";
    case ErrorCode::kRtEventTimestampInvalid: return "The event timestamp is invalid.";
    case ErrorCode::kRtEventTimestampReversal: return "Invert the event timestamp.";
    case ErrorCode::kRtMemoryAddressUnaligned: return "The memory address is not aligned.";
    case ErrorCode::kRtOpenFile: return "Failed to open the file.";
    case ErrorCode::kRtWriteFile: return "Failed to write the file.";
    case ErrorCode::kRtInvalidMemoryType: return "Invalid memory type.";
    case ErrorCode::kRtInvalidHandle: return "Invalid resource handle.";
    case ErrorCode::kRtWaitTimeout: return "Wait timed out.";
    case ErrorCode::kRtTaskTimeout: return "Task execution timed out.";
    case ErrorCode::kRtFeatureNotSupport: return "This feature is not supported.";
    case ErrorCode::kRtMemoryAllocation: return "Failed to apply for memory.";
    case ErrorCode::kRtMemoryFree: return "Failed to release the memory.";
    case ErrorCode::kRtDeviceUnavailable: return "The device is unavailable.";
    case ErrorCode::kRtNoPermission: return "You do not have the operation permission.";
    case ErrorCode::kRtNoEventResource: return "Event resources are insufficient.";
    case ErrorCode::kRtNoStreamResource: return "Stream resources are insufficient.";
    case ErrorCode::kRtDeviceOom: return "The memory on the device is exhausted.";
    case ErrorCode::kInternalError: return "Unknown internal error.";
    case ErrorCode::kFailure: return "The internal ACL of the system is incorrect.";
    case ErrorCode::kRtInternalError: return "An internal error occurs in the runtime module on the host.";
    case ErrorCode::kRtEventNotComplete: return "The event is not complete.";
    case ErrorCode::kRtAicpuException: return "The aicpu execution is abnormal.";
    case ErrorCode::kRtStreamSyncTimeout:
      return "In the specified timeout waiting event, all tasks in the specified stream are not completed.";
    case ErrorCode::kRtEventSyncTimeout:
      return "During the specified event synchronization waiting time, the event is not executed completely.";
    case ErrorCode::kRtDrvInternalError: return "An internal error occurs in the Driver module.";
  }
  return "Unknown error code.";
}

namespace {

std::string formatRuntimeError(ErrorCode code, const std::string& call, const std::string& detail) {
  std::string message = "NPU function error: " + call + ", error code is " +
                        std::to_string(static_cast<int32_t>(code)) + "\n[Error]: " + errorText(code);
  if (!detail.empty()) {
    message += "\n" + detail;
  }
  return message;
}

}  // namespace

RuntimeError::RuntimeError(ErrorCode code, std::string call, std::string detail)
    : std::runtime_error(formatRuntimeError(code, call, detail)),
      code_(code),
      call_(std::move(call)),
      detail_(std::move(detail)) {}

OutOfMemoryError::OutOfMemoryError(int device, std::string message)
    : std::runtime_error(std::move(message)), device_(device) {}

ForkedProcessError::ForkedProcessError()
    : std::runtime_error(
          "Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, you must use the "
          "'spawn' start method") {}

}  // namespace npusim::runtime
