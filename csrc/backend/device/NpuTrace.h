// The NPU trace that torch_npu's sanitizer listens to (torch_npu._C._activate_npu_trace):
// memory, stream and event activity of the device, or the start and end of each kernel.
//
// Off by default: every hook is one relaxed atomic load. Activated, the hooks hand each
// event to the sink the Python face installs (it runs the callbacks registered in
// torch_npu.utils._npu_trace). Hooks are called outside the backend's locks: the sink takes
// the GIL, and a lock held across it could deadlock with a thread that holds the GIL.
#pragma once

#include <cstdint>

namespace npusim::backend {

enum class TraceKind : int {
  kEventCreation = 0,
  kEventDeletion,
  kEventRecord,        // (event, stream)
  kEventWait,          // (event, stream)
  kMemoryAllocation,   // (pointer)
  kMemoryDeallocation, // (pointer)
  kStreamCreation,     // (stream)
  kDeviceSynchronization,
  kStreamSynchronization,  // (stream)
  kEventSynchronization,   // (event)
  kRecordStream,       // (pointer, stream)
  kEraseStream,        // (pointer, stream)
  kAclStartExecution,  // kernel mode: (name)
  kAclFinishExecution, // kernel mode: (name)
};

// torch_npu's SanitizerMode: STREAM 0 (memory, streams, events), KERNEL 1 (kernels).
enum class TraceMode : int { kOff = -1, kStream = 0, kKernel = 1 };

using TraceSink = void (*)(TraceKind kind, uintptr_t first, uintptr_t second, const char* name);

// Turns the trace on in `mode` with `sink` (once on, it stays on, as in torch_npu).
void activateTrace(TraceMode mode, TraceSink sink);
TraceMode traceMode() noexcept;

// Stream-mode events; ignored unless the trace is on in stream mode.
void trace(TraceKind kind, uintptr_t first = 0, uintptr_t second = 0) noexcept;
// Kernel-mode events (the start and end of a kernel named `name`).
void traceKernel(TraceKind kind, const char* name) noexcept;

}  // namespace npusim::backend
