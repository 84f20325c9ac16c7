#include "backend/timing/L2Residency.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/Runtime.h"
#include "runtime/SpinLock.h"

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

// Where a base was last found among the entries, by a hash of the base: a
// lookup checks that entry first and scans all of them only when the hint is
// stale. Bases are unique among the entries (a touch updates its entry or
// adds one), so the hinted entry is the one the scan would find; a call's
// few operands are found in one compare each instead of a scan of 64.
constexpr size_t kHints = 128;

struct DeviceL2 {
  std::array<Entry, kEntries> entries{};
  std::array<uint8_t, kHints> hints{};
  size_t next = 0;
  double traffic = 0;
};

size_t hintOf(const void* base) noexcept {
  const auto address = reinterpret_cast<uintptr_t>(base);
  return ((address >> 9) ^ (address >> 16)) % kHints;  // device blocks are multiples of 512 bytes
}

// The entry of `base` (not null), or nullptr.
Entry* lookup(DeviceL2& l2, const void* base) noexcept {
  uint8_t& hint = l2.hints[hintOf(base)];
  if (l2.entries[hint].base == base) return &l2.entries[hint];
  for (size_t i = 0; i < kEntries; ++i) {
    if (l2.entries[i].base == base) {
      hint = static_cast<uint8_t>(i);
      return &l2.entries[i];
    }
  }
  return nullptr;
}

class Residency {
 public:
  static Residency& instance() {
    static auto* residency = new Residency();  // never destroyed: used until exit
    return *residency;
  }

  void query(int device, c10::ArrayRef<L2Buffer> buffers, bool* resident) {
    std::lock_guard<runtime::SpinLock> lock(lock_);
    for (size_t i = 0; i < buffers.size(); ++i) {
      const L2Buffer& buffer = buffers[i];
      resident[i] = buffer.base != nullptr && buffer.bytes > 0 && residentLocked(device, buffer.base, buffer.bytes);
    }
  }

  void touch(int device, c10::ArrayRef<L2Buffer> buffers, double traffic) {
    std::lock_guard<runtime::SpinLock> lock(lock_);
    if (traffic > 0) get(device).traffic += traffic;
    for (const L2Buffer& buffer : buffers) {
      if (buffer.base == nullptr) continue;
      if (buffer.bytes <= 0 || buffer.bytes > capacity_) continue;
      touchLocked(device, buffer.base, buffer.bytes);
    }
  }

  void traffic(int device, double bytes) {
    if (bytes <= 0) return;
    std::lock_guard<runtime::SpinLock> lock(lock_);
    get(device).traffic += bytes;
  }

 private:
  bool residentLocked(int device, const void* base, double bytes) {
    DeviceL2* l2 = find(device);
    if (l2 == nullptr) return false;
    const Entry* entry = lookup(*l2, base);
    return entry != nullptr && l2->traffic - entry->stamp + entry->bytes <= capacity_;  // stamp includes itself
  }

  void touchLocked(int device, const void* base, double bytes) {
    DeviceL2& l2 = get(device);
    // The touched buffer takes the newest lines: everything touched before it
    // is that much closer to eviction (so two buffers touched together are
    // resident together only if both fit).
    l2.traffic += bytes;
    if (Entry* entry = lookup(l2, base)) {
      entry->bytes = bytes;
      entry->stamp = l2.traffic;
      return;
    }
    l2.entries[l2.next] = Entry{base, bytes, l2.traffic};
    l2.hints[hintOf(base)] = static_cast<uint8_t>(l2.next);
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

  runtime::SpinLock lock_;  // every critical section is a few lookups
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
