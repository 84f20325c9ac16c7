// The device guard of the npu device: current device, streams and events for
// c10::DeviceGuard, torch.Stream, torch.Event and torch.accelerator.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "backend/device/AutogradThreads.h"
#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/NpuStreams.h"
#include "backend/device/NpuTrace.h"
#include "runtime/Runtime.h"
#include "runtime/Timeline.h"

namespace npusim::backend {
namespace {

using runtime::Runtime;

// "npu" without an index means the current device.
c10::DeviceIndex resolve(c10::DeviceIndex device) {
  return device >= 0 ? device : static_cast<c10::DeviceIndex>(Runtime::currentDevice());
}

c10::Stream makeStream(c10::DeviceIndex device, runtime::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, resolve(device)), id);
}

class NpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }

  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (previous.index() != device.index()) setDevice(device);
    return previous;
  }

  c10::Device getDevice() const override {
    return c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(Runtime::currentDevice()));
  }

  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "expected an npu device, got ", device);
    noteDeviceThreadIfAutograd(device.index());
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().setDevice(device.index()));
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    Runtime::instance().setDeviceUnchecked(device.index());
  }

  c10::Stream getStream(c10::Device device) const override {
    return makeStream(device.index(), currentStream(resolve(device.index())));
  }

  c10::Stream getDefaultStream(c10::Device device) const override { return makeStream(device.index(), 0); }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool isHighPriority) const override {
    runtime::StreamId id = 0;
    NPUSIM_TRANSLATE_ERRORS(id = Runtime::instance().timeline(resolve(device.index())).streamFromPool(isHighPriority));
    trace(TraceKind::kStreamCreation, static_cast<uintptr_t>(id));
    return makeStream(device.index(), id);
  }

  c10::Stream getNewStream(c10::Device device, int priority) const override {
    return getStreamFromGlobalPool(device, priority < 0);
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    const c10::DeviceIndex device = resolve(stream.device_index());
    const c10::Stream previous = makeStream(device, currentStream(device));
    setCurrentStream(device, stream.id());
    return previous;
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(Runtime::visibleDeviceCount());
    } catch (...) {
      return 0;  // a broken configuration shows no device; the error surfaces on first use
    }
  }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event != nullptr) trace(TraceKind::kEventDeletion, reinterpret_cast<uintptr_t>(event));
    delete static_cast<runtime::Event*>(event);
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex deviceIndex,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(deviceIndex == -1 || deviceIndex == stream.device_index(), "Event device index ", deviceIndex,
                " does not match recording stream's device index ", stream.device_index(), ".");
    auto* simulated = static_cast<runtime::Event*>(*event);
    if (simulated == nullptr) {
      simulated = new runtime::Event();
      *event = simulated;
      trace(TraceKind::kEventCreation, reinterpret_cast<uintptr_t>(simulated));
    }
    // BACKEND_DEFAULT is the timing flavour (torch.Event(enable_timing=True)).
    const bool timing = flag == c10::EventFlag::BACKEND_DEFAULT;
    NPUSIM_TRANSLATE_ERRORS(
        Runtime::instance().timeline(stream.device_index()).recordEvent(*simulated, stream.id(), timing));
    trace(TraceKind::kEventRecord, reinterpret_cast<uintptr_t>(simulated), static_cast<uintptr_t>(stream.id()));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().timeline(stream.device_index())
                                .streamWaitEvent(stream.id(), *static_cast<runtime::Event*>(event)));
    trace(TraceKind::kEventWait, reinterpret_cast<uintptr_t>(event), static_cast<uintptr_t>(stream.id()));
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    const auto& simulated = *static_cast<runtime::Event*>(event);
    bool done = true;
    NPUSIM_TRANSLATE_ERRORS(done = Runtime::instance().timeline(simulated.device).queryEvent(simulated));
    return done;
  }

  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    const auto& simulated = *static_cast<runtime::Event*>(event);
    if (!simulated.recorded) return;
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().timeline(simulated.device).synchronizeEvent(simulated));
    trace(TraceKind::kEventSynchronization, reinterpret_cast<uintptr_t>(event));
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before calculating elapsed time.");
    double ms = 0;
    NPUSIM_TRANSLATE_ERRORS(ms = runtime::elapsedTimeMs(*static_cast<runtime::Event*>(start),
                                                        *static_cast<runtime::Event*>(end)));
    return ms;
  }

  bool queryStream(const c10::Stream& stream) const override {
    bool done = true;
    NPUSIM_TRANSLATE_ERRORS(done = Runtime::instance().timeline(stream.device_index()).queryStream(stream.id()));
    return done;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().timeline(stream.device_index()).synchronizeStream(stream.id()));
    trace(TraceKind::kStreamSynchronization, static_cast<uintptr_t>(stream.id()));
  }

  void synchronizeDevice(const c10::DeviceIndex deviceIndex) const override {
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().synchronizeDevice(deviceIndex));
    trace(TraceKind::kDeviceSynchronization);
  }

  void recordDataPtrOnStream(const c10::DataPtr& dataPtr, const c10::Stream& stream) const override {
    // Used by Tensor.record_stream: the block is not reused until the stream's work is done.
    npuDeviceAllocator()->recordStream(dataPtr, stream);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NpuGuardImpl);

}  // namespace
}  // namespace npusim::backend
