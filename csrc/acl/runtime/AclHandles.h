// The objects behind AscendCL's opaque handles (aclrtContext, aclrtStream, aclrtEvent) and the
// per-thread current context, over npusim's runtime (devices, simulated timeline).
//
// Contexts. aclrtSetDevice makes a device's default context current for the calling thread
// (created on first use; each aclrtSetDevice adds one reference, aclrtResetDevice removes one,
// and at zero the device's streams, events and aclrtMalloc memory are released).
// aclrtCreateContext makes an extra context on a device. A thread with no current context
// whose current runtime device was initialised by npusim's PyTorch backend in the same process
// (and never set through acl) uses that device's default context, as torch_npu's own
// aclrtSetDevice would have made it current.
//
// Streams. A created stream is one of the simulated device's pool streams, handed out
// round-robin as torch_npu's stream pools hand them out: beyond 32 live streams on a device,
// two streams share one clock of the timeline (their work is modelled as serialised). The
// null stream is the current context's default stream. A handle that is not a created stream
// but a small integer naming a timeline stream of the current device (torch.npu.Stream's
// npu_stream) is accepted as that stream, so that a C++ extension can pass PyTorch's current
// stream to acl calls.
//
// Handles are checked: a destroyed or made-up handle is refused with ACL_ERROR_RT_PARAM_INVALID
// instead of crashing.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "acl/acl_rt.h"
#include "runtime/Timeline.h"

namespace npusim::acl {

struct AclContext {
  int device = 0;
  bool isDefault = false;                 // the device's default context (aclrtSetDevice)
  runtime::StreamId defaultStream = 0;    // the timeline stream of the null stream
};

struct AclStream {
  int device = 0;
  runtime::StreamId stream = 0;  // timeline stream
  AclContext* context = nullptr;
  uint32_t priority = 0;
  uint32_t flags = 0;
  uint64_t failureMode = ACL_CONTINUE_ON_FAILURE;
};

struct AclEvent {
  runtime::Event event;
  uint32_t flags = 0;
  int device = 0;
};

// A stream as the calls below need it: device and timeline stream.
struct ResolvedStream {
  int device = 0;
  runtime::StreamId stream = 0;
  AclStream* created = nullptr;  // null for the default stream or a PyTorch stream id
};

// The current context of the calling thread; throws AclFailure(ACL_ERROR_RT_CONTEXT_NULL) when
// there is none.
AclContext& currentContext();
// The device of the current context (throws as above).
int currentDeviceOrThrow();

// aclrtSetDevice / aclrtResetDevice(Force): throws RuntimeError(107001) for a bad id.
void setDevice(int device);
void resetDevice(int device, bool force);
// Resets every device still set (aclFinalize).
void resetAllDevices();

AclContext* createContext(int device);
void destroyContext(aclrtContext context);
void setCurrentContext(aclrtContext context);
aclrtContext currentContextHandle();

AclStream* createStream(uint32_t priority, uint32_t flags);
void destroyStream(aclrtStream stream, bool force);
ResolvedStream resolveStream(aclrtStream stream);

AclEvent* createEvent(uint32_t flags, bool timing);
void destroyEvent(aclrtEvent event);
AclEvent& resolveEvent(aclrtEvent event);

// Raw device memory of aclrtMalloc, by device (released by the device's last reset).
void* allocateDevice(size_t bytes);
void freeDevice(void* pointer);
// The device whose simulated HBM holds [pointer, pointer + bytes), -1 if none; -2 when the
// pointer is device memory but the range runs past the end of its allocation.
int deviceOfRange(const void* pointer, size_t bytes);

}  // namespace npusim::acl
