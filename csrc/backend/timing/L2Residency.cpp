#include "backend/timing/L2Residency.h"

#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

struct Entry {
  const void* base = nullptr;
  double bytes = 0;
  double stamp = 0;  // the device's traffic when it was last touched
};

// A few dozen recent buffers cover what one L2 holds between kernels of a
// training step; the oldest entry is replaced first.
constexpr size_t kEntries = 64;

struct DeviceL2 {
  std::array<Entry, kEntries> entries{};
  size_t next = 0;
  double traffic = 0;
};

// Guards the residency tables. Every critical section is a scan of a few dozen
// entries, so a waiter spins briefly (yielding) instead of sleeping; taking and
// releasing it uncontended is one atomic exchange and one store, where a
// pthread mutex costs a library call each way on every operator.
class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

class Residency {
 public:
  static Residency& instance() {
    static auto* residency = new Residency();  // never destroyed: used until exit
    return *residency;
  }

  void query(int device, c10::ArrayRef<L2Buffer> buffers, bool* resident) {
    std::lock_guard<SpinLock> lock(lock_);
    for (size_t i = 0; i < buffers.size(); ++i) {
      const L2Buffer& buffer = buffers[i];
      resident[i] = buffer.base != nullptr && buffer.bytes > 0 && residentLocked(device, buffer.base, buffer.bytes);
    }
  }

  void touch(int device, c10::ArrayRef<L2Buffer> buffers, double traffic) {
    std::lock_guard<SpinLock> lock(lock_);
    if (traffic > 0) get(device).traffic += traffic;
    for (const L2Buffer& buffer : buffers) {
      if (buffer.base == nullptr) continue;
      if (buffer.bytes <= 0 || buffer.bytes > capacity_) continue;
      touchLocked(device, buffer.base, buffer.bytes);
    }
  }

  void traffic(int device, double bytes) {
    if (bytes <= 0) return;
    std::lock_guard<SpinLock> lock(lock_);
    get(device).traffic += bytes;
  }

 private:
  bool residentLocked(int device, const void* base, double bytes) {
    DeviceL2* l2 = find(device);
    if (l2 == nullptr) return false;
    for (const Entry& entry : l2->entries) {
      if (entry.base == base) return l2->traffic - entry.stamp + entry.bytes <= capacity_;  // stamp includes itself
    }
    return false;
  }

  void touchLocked(int device, const void* base, double bytes) {
    DeviceL2& l2 = get(device);
    // The touched buffer takes the newest lines: everything touched before it
    // is that much closer to eviction (so two buffers touched together are
    // resident together only if both fit).
    l2.traffic += bytes;
    for (Entry& entry : l2.entries) {
      if (entry.base == base) {
        entry.bytes = bytes;
        entry.stamp = l2.traffic;
        return;
      }
    }
    l2.entries[l2.next] = Entry{base, bytes, l2.traffic};
    l2.next = (l2.next + 1) % kEntries;
  }

  Residency() : capacity_(double(runtime::Runtime::instance().chip().l2CacheBytes)) {}

  DeviceL2* find(int device) {
    return device >= 0 && size_t(device) < devices_.size() ? &devices_[size_t(device)] : nullptr;
  }
  DeviceL2& get(int device) {
    const size_t index = device < 0 ? 0 : size_t(device);
    if (index >= devices_.size()) devices_.resize(index + 1);
    return devices_[index];
  }

  SpinLock lock_;
  std::vector<DeviceL2> devices_;
  const double capacity_;
};

}  // namespace

L2Buffer l2BufferOf(const c10::TensorImpl& tensor) noexcept {
  if (!tensor.has_storage()) return L2Buffer{};
  const c10::Storage& storage = tensor.unsafe_storage();
  return L2Buffer{storage.data(), double(storage.nbytes())};
}

void queryL2Residency(int device, c10::ArrayRef<L2Buffer> buffers, bool* resident) {
  if (!buffers.empty()) Residency::instance().query(device, buffers, resident);
}

void touchL2(int device, c10::ArrayRef<L2Buffer> buffers, double traffic) {
  if (buffers.empty()) {
    addL2Traffic(device, traffic);
  } else {
    Residency::instance().touch(device, buffers, traffic);
  }
}

void addL2Traffic(int device, double bytes) { Residency::instance().traffic(device, bytes); }

}  // namespace npusim::backend
