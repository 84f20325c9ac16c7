#include "backend/device/NpuAllocator.h"

#include <array>
#include <utility>

#include <c10/core/CPUAllocator.h>
#include <c10/core/Stream.h>

#include "backend/device/NpuErrors.h"
#include "backend/device/NpuStreams.h"
#include "backend/device/NpuTrace.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

// One deleter function per device: a DataPtr then says by its deleter alone
// which allocator owns it, without a lookup on every free.
// torch.profiler(profile_memory=True) hears of every allocation and free,
// with the allocator's totals after it, as from CUDA's allocator.
void reportToProfiler(int device, void* ptr, int64_t delta) {
  const auto& allocator = runtime::Runtime::instance().allocator(device);
  c10::reportMemoryUsageToProfiler(ptr, delta, allocator.allocatedBytes(), allocator.reservedBytes(),
                                   c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
}

template <int Device>
void freeOnDevice(void* ptr) {
  // A zero-size block has no address: freeing it is a no-op, as on the real allocator.
  if (ptr == nullptr) return;
  try {
    // A forked child frees nothing: the parent's blocks are the parent's, and
    // the child's copy of them goes away with the child.
    if (runtime::Runtime::inForkedChild()) return;
    trace(TraceKind::kMemoryDeallocation, reinterpret_cast<uintptr_t>(ptr));
    if (c10::memoryProfilingEnabled()) {
      const int64_t size = static_cast<int64_t>(runtime::Runtime::instance().allocator(Device).allocationSize(ptr));
      runtime::Runtime::instance().allocator(Device).free(ptr);
      reportToProfiler(Device, ptr, -size);
      return;
    }
    runtime::Runtime::instance().allocator(Device).free(ptr);
  } catch (const std::exception& e) {
    // A deleter must not throw; the block is lost but the process goes on.
    NPUSIM_PLOG(runtime::LogLevel::kError, "APP", std::string("[PTA]:free failed: ") + e.what());
  }
}

template <size_t... Devices>
constexpr std::array<c10::DeleterFnPtr, sizeof...(Devices)> makeDeleters(std::index_sequence<Devices...>) {
  return {&freeOnDevice<static_cast<int>(Devices)>...};
}

constexpr auto kDeleters = makeDeleters(std::make_index_sequence<kMaxDevices>{});

thread_local int tlsOutputDevice = -1;
thread_local uint32_t tlsAllocationsSincePublish = 0;

void convertStat(const runtime::Stat& from, c10::CachingAllocator::Stat& to) {
  to.current = from.current;
  to.peak = from.peak;
  to.allocated = from.allocated;
  to.freed = from.freed;
}

void convertStats(const std::array<runtime::Stat, 3>& from, c10::CachingAllocator::StatArray& to) {
  for (size_t i = 0; i < 3; ++i) convertStat(from[i], to[i]);
}

class NpuDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    return allocateDeviceMemory(runtime::Runtime::instance().currentDevice(), n, c10::DeviceType::PrivateUse1);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return kDeleters[static_cast<size_t>(runtime::Runtime::instance().currentDevice())];
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    // Device memory is host memory: a device-to-device copy is a memcpy.
    default_copy_data(dest, src, count);
  }

  bool initialized() override { return true; }

  // The default id empties the default pools and released private pools;
  // another id empties that private pool only (as CUDA's allocator).
  void emptyCache(c10::MempoolId_t pool) override {
    NPUSIM_TRANSLATE_ERRORS({
      auto& rt = runtime::Runtime::instance();
      const runtime::MempoolId id{pool.first, pool.second};
      for (int d = 0; d < rt.deviceCount(); ++d) {
        if (rt.isDeviceInitialized(d)) rt.allocator(d).emptyCache(id);
      }
      rt.publishStatus(true);
    });
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (!ptr.get()) return;
    const int device = owningDevice(ptr);
    if (device < 0) return;
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().allocator(device).recordStream(ptr.get(), stream.id()));
    // Every record_stream (operator, guard, collectives) passes here: the sanitizer hears of it once.
    trace(TraceKind::kRecordStream, reinterpret_cast<uintptr_t>(ptr.get()), static_cast<uintptr_t>(stream.id()));
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    c10::CachingDeviceAllocator::DeviceStats out;
    runtime::MemoryStats stats;
    NPUSIM_TRANSLATE_ERRORS(stats = runtime::Runtime::instance().allocator(device).stats());
    convertStats(stats.allocation, out.allocation);
    convertStats(stats.segment, out.segment);
    convertStats(stats.active, out.active);
    convertStats(stats.inactive_split, out.inactive_split);
    convertStats(stats.allocated_bytes, out.allocated_bytes);
    convertStats(stats.reserved_bytes, out.reserved_bytes);
    convertStats(stats.active_bytes, out.active_bytes);
    convertStats(stats.inactive_split_bytes, out.inactive_split_bytes);
    convertStats(stats.requested_bytes, out.requested_bytes);
    out.num_alloc_retries = stats.num_alloc_retries;
    out.num_ooms = stats.num_ooms;
    convertStat(stats.oversize_allocations, out.oversize_allocations);
    convertStat(stats.oversize_segments, out.oversize_segments);
    out.num_sync_all_streams = stats.num_sync_all_streams;
    out.num_device_alloc = stats.num_device_alloc;
    out.num_device_free = stats.num_device_free;
    out.max_split_size = stats.max_split_size;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().allocator(device).resetAccumulatedStats());
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().allocator(device).resetPeakStats());
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    size_t total = 0, reserved = 0;
    NPUSIM_TRANSLATE_ERRORS({
      auto& rt = runtime::Runtime::instance();
      total = rt.deviceCapacity();
      reserved = rt.allocator(device).reservedBytes();
    });
    return {total > reserved ? total - reserved : 0, total};
  }
};

NpuDeviceAllocator deviceAllocator;

// Delegates to PyTorch's own CPU allocator except inside ScopedOutputDevice.
class RoutingCpuAllocator final : public c10::Allocator {
 public:
  explicit RoutingCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t n) override {
    if (tlsOutputDevice < 0) return base_->allocate(n);
    return allocateDeviceMemory(tlsOutputDevice, n, c10::DeviceType::CPU);
  }

  // raw_allocate() outside an npu operator is PyTorch's; inside one the
  // memory is device memory, freed by the device deleter it carries.
  c10::DeleterFnPtr raw_deleter() const override {
    return tlsOutputDevice < 0 ? base_->raw_deleter() : kDeleters[static_cast<size_t>(tlsOutputDevice)];
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override { base_->copy_data(dest, src, count); }

 private:
  c10::Allocator* base_;
};

}  // namespace

c10::DataPtr allocateDeviceMemory(int device, size_t bytes, c10::DeviceType label) {
  void* ptr = nullptr;
  NPUSIM_TRANSLATE_ERRORS({
    auto& rt = runtime::Runtime::instance();
    ptr = rt.allocator(device).allocate(bytes, currentStream(device));
    if (++tlsAllocationsSincePublish >= 256) {
      tlsAllocationsSincePublish = 0;
      rt.publishStatus();
    }
  });
  if (ptr != nullptr && c10::memoryProfilingEnabled()) {
    reportToProfiler(device, ptr, static_cast<int64_t>(runtime::Runtime::instance().allocator(device).allocationSize(ptr)));
  }
  if (ptr != nullptr) trace(TraceKind::kMemoryAllocation, reinterpret_cast<uintptr_t>(ptr));
  return c10::DataPtr(ptr, ptr, ptr ? kDeleters[static_cast<size_t>(device)] : nullptr,
                      c10::Device(label, static_cast<c10::DeviceIndex>(label == c10::DeviceType::CPU ? -1 : device)));
}

int owningDevice(const c10::DataPtr& dataPtr) noexcept {
  const c10::DeleterFnPtr deleter = dataPtr.get_deleter();
  for (size_t d = 0; d < kDeleters.size(); ++d) {
    if (kDeleters[d] == deleter) return static_cast<int>(d);
  }
  return -1;
}

c10::DeviceAllocator* npuDeviceAllocator() { return &deviceAllocator; }

ScopedOutputDevice::ScopedOutputDevice(int device) noexcept : previous_(tlsOutputDevice) { tlsOutputDevice = device; }
ScopedOutputDevice::~ScopedOutputDevice() { tlsOutputDevice = previous_; }

c10::Allocator* routingCpuAllocator() {
  static RoutingCpuAllocator allocator(c10::GetCPUAllocator());
  return &allocator;
}

namespace {
// Registration at load time, as torch_npu does for its allocator.
struct RegisterAllocators {
  RegisterAllocators() {
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &deviceAllocator);
    c10::SetCPUAllocator(routingCpuAllocator(), /*priority=*/1);
  }
};
RegisterAllocators registerAllocators;
}  // namespace

}  // namespace npusim::backend
