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

const char* errorHint(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidParam:
      return "Check whether the input parameter value of the interface is correct.";
    case ErrorCode::kUninitialized:
      return "(1)Check whether the acl.init interface has been invoked for initialization. Ensure that the acl.init interface has been invoked before other pyACL interfaces.\n        (2)Check whether the initialization interface of the corresponding function has been invoked, for example, the acl.mdl.init_dump interface for initializing Dump and the acl.prof.init interface for initializing Profiling.";
    case ErrorCode::kRepeatInitialize:
      return "Check whether the corresponding interface is repeatedly invoked for initialization or loading.";
    case ErrorCode::kInvalidFile:
      return "Check whether the file exists and can be accessed.";
    case ErrorCode::kParseFile:
      return "Check whether the file content is valid.";
    case ErrorCode::kBadAlloc:
      return "Check the available memory in the hardware environment.";
    case ErrorCode::kRtParamInvalid:
      return "Check whether the input parameters of the interface are correct.";
    case ErrorCode::kRtInvalidDeviceId:
      return "Check whether the device ID is valid.";
    case ErrorCode::kRtContextNull:
      return "Check whether acl.rt.set_context or acl.rt.set_device is called.";
    case ErrorCode::kRtStreamContext:
      return "Check whether the context where the stream is located is the same as the current context.";
    case ErrorCode::kRtEventTimestampInvalid:
      return "Check whether the event is created.";
    case ErrorCode::kRtEventTimestampReversal:
      return "Check whether the event is created.";
    case ErrorCode::kRtMemoryAddressUnaligned:
      return "Check whether the applied memory addresses are aligned. For details about the restrictions on the memory application interface, see Memory Management.";
    case ErrorCode::kRtOpenFile:
      return "Check whether the file exists.";
    case ErrorCode::kRtWriteFile:
      return "Check whether the file exists or has the write permission.";
    case ErrorCode::kRtInvalidHandle:
      return "Check whether the input and used parameters are correct.";
    case ErrorCode::kRtFeatureNotSupport:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtMemoryAllocation:
      return "Check the remaining storage space in the hardware environment.";
    case ErrorCode::kRtMemoryFree:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtDeviceUnavailable:
      return "Check whether the device is running properly.";
    case ErrorCode::kRtNoPermission:
      return "Check whether the permission of the user who runs the application is correct.";
    case ErrorCode::kRtNoEventResource:
      return "Check whether the number of events meets the requirements by referring to the description of the acl.rt.create_event interface.";
    case ErrorCode::kRtNoStreamResource:
      return "Check whether the number of streams meets the requirements by referring to the description of the acl.rt.create_stream interface.";
    case ErrorCode::kRtDeviceOom:
      return "Check the memory usage on the device and properly plan the memory usage based on the memory specifications on the device.";
    case ErrorCode::kInternalError:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kFailure:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtInternalError:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtEventNotComplete:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtAicpuException:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtStreamSyncTimeout:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtEventSyncTimeout:
      return "Rectify the fault based on the error information in the ascend log.";
    case ErrorCode::kRtDrvInternalError:
      return "Rectify the fault based on the error information in the ascend log.";
    default: return "";
  }
}

namespace {

std::string formatRuntimeError(ErrorCode code, const std::string& call, const std::string& detail) {
  std::string message = "NPU function error: " + call + ", error code is " +
                        std::to_string(static_cast<int32_t>(code)) + "\n[Error]: " + errorText(code);
  // torch_npu's table (NPUErrorCodes.h) puts what to check on an indented second line.
  const std::string hint = errorHint(code);
  if (!hint.empty()) message += "\n        " + hint;
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
