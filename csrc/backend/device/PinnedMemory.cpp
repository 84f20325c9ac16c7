#include "backend/device/PinnedMemory.h"

#include <ATen/core/CachingHostAllocator.h>

#include "backend/device/HostRegistration.h"
#include "backend/device/NpuErrors.h"
#include "runtime/HostAllocator.h"

namespace npusim::backend {
namespace {

void freePinned(void* ptr) {
  try {
    runtime::HostAllocator::instance().free(ptr);
  } catch (...) {
    // A deleter must not throw; an unknown pointer is left alone.
  }
}

void convert(const runtime::Stat& from, at::HostStats& to, at::Stat at::HostStats::*field) {
  (to.*field).current = from.current;
  (to.*field).peak = from.peak;
  (to.*field).allocated = from.allocated;
  (to.*field).freed = from.freed;
}

class NpuPinnedAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    void* ptr = nullptr;
    NPUSIM_TRANSLATE_ERRORS(ptr = runtime::HostAllocator::instance().allocate(n));
    return c10::DataPtr(ptr, ptr, ptr ? &freePinned : nullptr, c10::Device(c10::DeviceType::CPU));
  }

  c10::DeleterFnPtr raw_deleter() const override { return &freePinned; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  // Simulated copies complete when issued, so a pinned block is free for
  // reuse as soon as it is freed.
  bool record_event(void*, void*, c10::Stream) override { return true; }

  void empty_cache() override { NPUSIM_TRANSLATE_ERRORS(runtime::HostAllocator::instance().emptyCache()); }

  at::HostStats get_stats() override {
    runtime::HostMemoryStats stats;
    NPUSIM_TRANSLATE_ERRORS(stats = runtime::HostAllocator::instance().stats());
    at::HostStats out;
    convert(stats.allocations, out, &at::HostStats::active_requests);
    convert(stats.allocated_bytes, out, &at::HostStats::active_bytes);
    convert(stats.allocations, out, &at::HostStats::allocations);
    convert(stats.reserved_bytes, out, &at::HostStats::allocated_bytes);
    out.num_host_alloc = stats.num_host_alloc;
    out.num_host_free = stats.num_host_free;
    return out;
  }

  void reset_accumulated_stats() override {
    NPUSIM_TRANSLATE_ERRORS(runtime::HostAllocator::instance().resetAccumulatedStats());
  }

  void reset_peak_stats() override { NPUSIM_TRANSLATE_ERRORS(runtime::HostAllocator::instance().resetPeakStats()); }
};

NpuPinnedAllocator pinnedAllocator;

}  // namespace

at::Allocator* pinnedHostAllocator() { return &pinnedAllocator; }

bool isPinnedHostPointer(const void* ptr) {
  if (isRegisteredHostPointer(ptr)) return true;
  try {
    return runtime::HostAllocator::instance().isPinned(ptr);
  } catch (...) {
    return false;
  }
}

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &pinnedAllocator)

}  // namespace npusim::backend
