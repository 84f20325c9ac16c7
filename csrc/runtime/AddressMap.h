// The caching allocator's table of live allocations, address -> block.
// Every allocate inserts and every free erases, so the table is on the hot
// path: std::unordered_map allocates and frees a heap node per insertion,
// which cost about as much as the rest of a cached allocation. This is an
// open-addressing table (linear probing, backward-shift deletion) over one
// flat array: no heap traffic except when it grows, and a lookup usually
// reads one cache line.
//
// Keys are non-null addresses (nullptr marks an empty slot); values are
// pointers. Not thread-safe: the allocator's mutex guards it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace npusim::runtime {

template <typename Value>
class AddressMap {
 public:
  AddressMap() { rehash(kInitialCapacity); }

  // nullptr when `key` is not in the table.
  Value* find(const void* key) const noexcept {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return slot.value;
      if (slot.key == nullptr) return nullptr;
    }
  }

  // `key` must not be in the table yet.
  void insert(const void* key, Value* value) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    size_t i = home(key);
    while (slots_[i].key != nullptr) i = (i + 1) & mask_;
    slots_[i] = Slot{key, value};
    ++size_;
  }

  // Removes `key` and returns its value; nullptr (nothing removed) when absent.
  Value* erase(const void* key) noexcept {
    size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == nullptr) return nullptr;
      i = (i + 1) & mask_;
    }
    Value* value = slots_[i].value;
    // Backward shift: pull later entries of the probe run into the hole, so
    // lookups never need tombstones.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].key != nullptr; j = (j + 1) & mask_) {
      const size_t wanted = home(slots_[j].key);
      // Entry j may move to the hole when the hole lies on its probe path,
      // i.e. cyclically within [wanted, j).
      if (((j - wanted) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return value;
  }

  size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    const void* key = nullptr;
    Value* value = nullptr;
  };

  static constexpr size_t kInitialCapacity = 256;

  // Allocations are at least 512-byte aligned: the low bits carry nothing.
  // Fibonacci hashing spreads the rest over the table.
  size_t home(const void* key) const noexcept {
    const uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key)) >> 9;
    return static_cast<size_t>((bits * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.key != nullptr) insert(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace npusim::runtime
