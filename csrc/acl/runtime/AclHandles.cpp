#include "acl/runtime/AclHandles.h"

#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acl/runtime/AclErrors.h"
#include "acl/runtime/ModelCapture.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

namespace npusim::acl {
namespace {

// Handles of PyTorch streams are their timeline ids: small integers no allocation returns.
constexpr uintptr_t kLargestStreamIdHandle = 4096;

struct ContextRecord {
  std::unique_ptr<AclContext> context;
  uint64_t serial = 0;
};

struct RawAllocation {
  int device = 0;
  size_t bytes = 0;
};

// Everything behind the handles, under one lock: acl calls that create or destroy handles are
// rare next to the work queued on them.
struct HandleTable {
  std::mutex mutex;
  std::unordered_map<AclContext*, uint64_t> contexts;  // live contexts and their serials
  std::vector<std::unique_ptr<AclContext>> owned;      // storage of live contexts
  std::map<int, AclContext*> defaultContexts;          // by device
  std::map<int, int> deviceReferences;                 // aclrtSetDevice count by device
  std::unordered_set<AclStream*> streams;
  std::unordered_set<AclEvent*> events;
  std::unordered_map<void*, RawAllocation> allocations;
  uint64_t nextSerial = 1;
};

HandleTable& table() {
  // Never destroyed: handles may be released from static destructors of a program.
  static HandleTable* instance = new HandleTable();
  return *instance;
}

struct CurrentContext {
  AclContext* context = nullptr;
  uint64_t serial = 0;
};
thread_local CurrentContext tlsCurrent;

runtime::Runtime& rt() { return runtime::Runtime::instance(); }

AclContext* newContextLocked(HandleTable& t, int device, bool isDefault) {
  auto context = std::make_unique<AclContext>();
  context->device = device;
  context->isDefault = isDefault;
  // The default context's null stream is the device's default stream (the one PyTorch's
  // default stream is); an extra context gets a stream of its own.
  context->defaultStream = isDefault ? runtime::DeviceTimeline::defaultStream() : rt().timeline(device).streamFromPool(false);
  AclContext* raw = context.get();
  t.contexts.emplace(raw, t.nextSerial++);
  t.owned.push_back(std::move(context));
  return raw;
}

void makeCurrentLocked(HandleTable& t, AclContext* context) {
  tlsCurrent.context = context;
  tlsCurrent.serial = context == nullptr ? 0 : t.contexts.at(context);
  if (context != nullptr) rt().setDeviceUnchecked(context->device);
}

AclContext* defaultContextLocked(HandleTable& t, int device) {
  auto it = t.defaultContexts.find(device);
  if (it != t.defaultContexts.end()) return it->second;
  AclContext* created = newContextLocked(t, device, true);
  t.defaultContexts.emplace(device, created);
  return created;
}

void eraseContextLocked(HandleTable& t, AclContext* context) {
  for (auto it = t.streams.begin(); it != t.streams.end();) {
    if ((*it)->context == context) {
      delete *it;
      it = t.streams.erase(it);
    } else {
      ++it;
    }
  }
  t.contexts.erase(context);
  if (context->isDefault) t.defaultContexts.erase(context->device);
  for (auto it = t.owned.begin(); it != t.owned.end(); ++it) {
    if (it->get() == context) {
      t.owned.erase(it);
      break;
    }
  }
}

// Releases what the device holds for acl: its default context and streams, its events and its
// aclrtMalloc memory (after the device's work has completed).
void releaseDeviceLocked(HandleTable& t, int device) {
  rt().synchronizeDevice(device);
  discardDeviceCaptures(device);
  if (auto it = t.defaultContexts.find(device); it != t.defaultContexts.end()) eraseContextLocked(t, it->second);
  for (auto it = t.events.begin(); it != t.events.end();) {
    if ((*it)->device == device) {
      delete *it;
      it = t.events.erase(it);
    } else {
      ++it;
    }
  }
  size_t released = 0;
  for (auto it = t.allocations.begin(); it != t.allocations.end();) {
    if (it->second.device == device) {
      rt().memory(device).free(it->first, it->second.bytes);
      released += it->second.bytes;
      it = t.allocations.erase(it);
    } else {
      ++it;
    }
  }
  t.deviceReferences.erase(device);
  rt().resetDevice(device);
  NPUSIM_PLOG(runtime::LogLevel::kInfo, "RUNTIME",
              "device " + std::to_string(device) + " reset, " + std::to_string(released) +
                  " bytes of aclrtMalloc memory released");
}

AclContext* currentLocked(HandleTable& t) {
  if (tlsCurrent.context != nullptr) {
    auto it = t.contexts.find(tlsCurrent.context);
    if (it != t.contexts.end() && it->second == tlsCurrent.serial) return tlsCurrent.context;
    tlsCurrent = {};
  }
  // A device that npusim's PyTorch backend initialised in this process (and acl never set): its
  // default context. A device that acl set gives new threads no context, as on the real stack.
  if (runtime::Runtime* started = runtime::Runtime::existing()) {
    const int device = runtime::Runtime::currentDevice();
    if (started->isDeviceInitialized(device) && t.deviceReferences.count(device) == 0) {
      AclContext* context = defaultContextLocked(t, device);
      tlsCurrent = {context, t.contexts.at(context)};
      return context;
    }
  }
  throw AclFailure(ACL_ERROR_RT_CONTEXT_NULL,
                   "the current context is null: call aclrtSetDevice or aclrtSetCurrentContext first");
}

}  // namespace

AclContext& currentContext() {
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return *currentLocked(t);
}

int currentDeviceOrThrow() { return currentContext().device; }

void setDevice(int device) {
  runtime::Runtime& runtime = rt();
  runtime.setDevice(device);  // validates (107001) and initialises the device
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  AclContext* context = defaultContextLocked(t, device);
  t.deviceReferences[device] += 1;
  makeCurrentLocked(t, context);
}

void resetDevice(int device, bool force) {
  rt().registry().checkDevice(device, force ? "aclrtResetDeviceForce" : "aclrtResetDevice");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto references = t.deviceReferences.find(device);
  if (references == t.deviceReferences.end()) return;  // never set: nothing to release
  if (!force && --references->second > 0) return;
  releaseDeviceLocked(t, device);
}

void resetAllDevices() {
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<int> devices;
  for (const auto& [device, count] : t.deviceReferences) devices.push_back(device);
  for (int device : devices) releaseDeviceLocked(t, device);
}

AclContext* createContext(int device) {
  rt().setDevice(device);
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  AclContext* context = newContextLocked(t, device, false);
  makeCurrentLocked(t, context);
  return context;
}

void destroyContext(aclrtContext handle) {
  requireNotNull(handle, "context");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto* context = static_cast<AclContext*>(handle);
  if (t.contexts.count(context) == 0) throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the context is not a live context");
  if (context->isDefault) {
    throw AclFailure(ACL_ERROR_RT_PARAM_INVALID,
                     "the default context of a device is released by aclrtResetDevice, not aclrtDestroyContext");
  }
  rt().synchronizeDevice(context->device);
  eraseContextLocked(t, context);
}

void setCurrentContext(aclrtContext handle) {
  requireNotNull(handle, "context");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto* context = static_cast<AclContext*>(handle);
  if (t.contexts.count(context) == 0) throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the context is not a live context");
  makeCurrentLocked(t, context);
}

aclrtContext currentContextHandle() { return &currentContext(); }

AclStream* createStream(uint32_t priority, uint32_t flags) {
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  AclContext* context = currentLocked(t);
  auto stream = std::make_unique<AclStream>();
  stream->device = context->device;
  stream->context = context;
  stream->priority = priority;
  stream->flags = flags;
  stream->stream = rt().timeline(context->device).streamFromPool(false);
  t.streams.insert(stream.get());
  return stream.release();
}

void destroyStream(aclrtStream handle, bool force) {
  requireNotNull(handle, "stream");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto* stream = static_cast<AclStream*>(handle);
  if (t.streams.count(stream) == 0) throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the stream is not a live stream");
  // aclrtDestroyStream returns once the stream's work has completed; the forced variant drops it.
  if (!force) rt().timeline(stream->device).synchronizeStream(stream->stream);
  // A capture still open on the stream ends with it, unrecorded.
  discardCapture(stream->device, stream->stream);
  t.streams.erase(stream);
  delete stream;
}

ResolvedStream resolveStream(aclrtStream handle) {
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (handle == nullptr) {
    AclContext* context = currentLocked(t);
    return {context->device, context->defaultStream, nullptr};
  }
  auto* stream = static_cast<AclStream*>(handle);
  if (t.streams.count(stream) != 0) return {stream->device, stream->stream, stream};
  const auto value = reinterpret_cast<uintptr_t>(handle);
  if (value < kLargestStreamIdHandle) {
    const int device = currentLocked(t)->device;
    if (rt().timeline(device).isValidStream(static_cast<runtime::StreamId>(value))) {
      return {device, static_cast<runtime::StreamId>(value), nullptr};
    }
  }
  throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the stream is not a live stream");
}

AclEvent* createEvent(uint32_t flags, bool timing) {
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  AclContext* context = currentLocked(t);
  auto event = std::make_unique<AclEvent>();
  event->flags = flags;
  event->device = context->device;
  event->event.device = context->device;
  event->event.timing = timing;
  t.events.insert(event.get());
  return event.release();
}

void destroyEvent(aclrtEvent handle) {
  requireNotNull(handle, "event");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto* event = static_cast<AclEvent*>(handle);
  if (t.events.erase(event) == 0) throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the event is not a live event");
  delete event;
}

AclEvent& resolveEvent(aclrtEvent handle) {
  requireNotNull(handle, "event");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto* event = static_cast<AclEvent*>(handle);
  if (t.events.count(event) == 0) throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the event is not a live event");
  return *event;
}

void* allocateDevice(size_t bytes) {
  const int device = currentDeviceOrThrow();
  runtime::DeviceMemory& memory = rt().memory(device);
  void* pointer = memory.allocate(bytes);
  if (pointer == nullptr) {
    throw AclFailure(ACL_ERROR_RT_MEMORY_ALLOCATION,
                     "out of memory on device " + std::to_string(device) + ": tried to allocate " +
                         std::to_string(bytes) + " bytes, " + std::to_string(memory.freeBytes()) + " bytes free of " +
                         std::to_string(memory.capacity()));
  }
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.allocations.emplace(pointer, RawAllocation{device, bytes});
  rt().publishStatus();
  return pointer;
}

void freeDevice(void* pointer) {
  requireNotNull(pointer, "devPtr");
  HandleTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.allocations.find(pointer);
  if (it == t.allocations.end()) {
    throw AclFailure(ACL_ERROR_RT_MEMORY_FREE, "the address is not the start of memory allocated by aclrtMalloc");
  }
  // The memory may still be in use by queued work: freeing waits for the device, as on the chip.
  rt().synchronizeDevice(it->second.device);
  rt().memory(it->second.device).free(pointer, it->second.bytes);
  t.allocations.erase(it);
  rt().publishStatus();
}

int deviceOfRange(const void* pointer, size_t bytes) {
  runtime::Runtime* started = runtime::Runtime::existing();
  if (started == nullptr) return -1;
  for (int device = 0; device < started->deviceCount(); ++device) {
    if (!started->isDeviceInitialized(device)) continue;
    const size_t available = started->memory(device).bytesFrom(pointer);
    if (available == 0) continue;
    return available >= bytes ? device : -2;
  }
  return -1;
}

}  // namespace npusim::acl
