#include "runtime/DeviceMemory.h"

#include <cstdint>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "runtime/Error.h"
#include "runtime/HostMemoryBudget.h"
#include "runtime/MemorySize.h"
#include "runtime/Plog.h"

namespace npusim::runtime {

namespace {

std::string hexPointer(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", ptr);
  return text;
}

// The live DeviceMemory objects (every device), for the residency of their
// uncommitted segments. Lock-free so that fork() can never inherit it held.
constexpr size_t kRegistrySlots = 256;
std::atomic<const DeviceMemory*> registry[kRegistrySlots];
// Bytes of uncommitted segments mapped now (all devices): residency is measured only when some exist.
std::atomic<uint64_t> uncommittedMapped{0};
std::atomic<bool> uncommittedAnnounced{false};

void registerMemory(const DeviceMemory* memory) {
  for (auto& slot : registry) {
    const DeviceMemory* empty = nullptr;
    if (slot.compare_exchange_strong(empty, memory)) return;
  }
}

void unregisterMemory(const DeviceMemory* memory) {
  for (auto& slot : registry) {
    const DeviceMemory* expected = memory;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

// Resident bytes of [base, base + bytes), a page-aligned mapping, read in pieces.
uint64_t residentBytes(void* base, size_t bytes) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kPagesPerPiece = size_t{1} << 14;
  std::vector<unsigned char> resident(kPagesPerPiece);
  uint64_t total = 0;
  auto* start = static_cast<char*>(base);
  for (size_t offset = 0; offset < bytes; offset += kPagesPerPiece * page) {
    const size_t length = std::min(bytes - offset, kPagesPerPiece * page);
    if (::mincore(start + offset, length, resident.data()) != 0) continue;
    const size_t pages = (length + page - 1) / page;
    for (size_t i = 0; i < pages; ++i) total += (resident[i] & 1) ? page : 0;
  }
  return total;
}

}  // namespace

DeviceMemory::DeviceMemory(int device, size_t capacityBytes) : device_(device), capacity_(capacityBytes) {
  registerMemory(this);
}

DeviceMemory::~DeviceMemory() {
  unregisterMemory(this);
  for (const auto& [ptr, mapping] : mappings_) {
    if (mapping.uncommitted) uncommittedMapped.fetch_sub(mapping.bytes, std::memory_order_relaxed);
    ::munmap(ptr, mapping.bytes);
    if (mapping.hostCommitted) HostMemoryBudget::instance().release(mapping.bytes);
  }
}

void* DeviceMemory::allocate(size_t bytes, std::string* hostRefusal) {
  if (bytes == 0) return nullptr;
  // Reserve the capacity first so that concurrent callers cannot overshoot.
  size_t current = used_.load(std::memory_order_relaxed);
  do {
    if (!overcommit() && (bytes > capacity_ || current > capacity_ - bytes)) return nullptr;
  } while (!used_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));

  // Real data (not estimate-only): the host must be able to back every
  // segment held, or writing them ends with the kernel's OOM killer.
  const bool commitToHost = !overcommit();
  if (commitToHost) {
    const uint64_t resident = uncommittedMapped.load(std::memory_order_relaxed) > 0 ? residentUncommittedBytes() : 0;
    if (std::optional<std::string> refusal = HostMemoryBudget::instance().commit(bytes, resident)) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);
      std::string text = "simulated device " + std::to_string(device_) +
                         " memory is host memory, and the host cannot give " + formatMemorySize(bytes) + " more: " +
                         *refusal + "; device capacity " + formatMemorySize(capacity_) +
                         ". Set NPUSIM_HBM_SIZE below the host's memory, or run in estimate-only mode "
                         "(npusim.estimate()), which needs no host memory for device data.";
      if (hostRefusal != nullptr) {
        *hostRefusal = std::move(text);
        return nullptr;
      }
      throw RuntimeError(ErrorCode::kRtMemoryAllocation, "aclrtMalloc", text);
    }
  }
  return map(bytes, commitToHost, false);
}

void* DeviceMemory::map(size_t bytes, bool hostCommitted, bool uncommitted) {
  auto undo = [&] {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    if (hostCommitted) HostMemoryBudget::instance().release(bytes);
  };
  void* ptr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ptr == MAP_FAILED) {
    int error = errno;
    undo();
    throw RuntimeError(ErrorCode::kRtMemoryAllocation, "aclrtMalloc",
                       "the host could not map " + std::to_string(bytes) + " bytes for simulated device " +
                           std::to_string(device_) + ": " + std::strerror(error));
  }
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    mappings_.emplace(ptr, Mapping{bytes, hostCommitted, uncommitted});
  } catch (...) {
    ::munmap(ptr, bytes);
    undo();
    throw;
  }
  if (uncommitted) uncommittedMapped.fetch_add(bytes, std::memory_order_relaxed);
  return ptr;
}

void* DeviceMemory::allocateUncommitted(size_t bytes, std::string* hostRefusal) {
  if (bytes == 0 || overcommit()) return allocate(bytes, hostRefusal);
  size_t current = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity_ || current > capacity_ - bytes) return nullptr;
  } while (!used_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  const uint64_t resident = residentUncommittedBytes();
  if (std::optional<std::string> refusal = HostMemoryBudget::instance().roomForResident(resident)) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    if (hostRefusal != nullptr) {
      *hostRefusal = "simulated device " + std::to_string(device_) +
                     " memory is host memory, and the host has no room left: " + *refusal + "; device capacity " +
                     formatMemorySize(capacity_) +
                     ". Set NPUSIM_HBM_SIZE below the host's memory, or run in estimate-only mode "
                     "(npusim.estimate()), which needs no host memory for device data.";
    }
    return nullptr;
  }
  void* ptr = map(bytes, false, true);
  if (!uncommittedAnnounced.exchange(true)) {
    const std::string note =
        "npusim: simulated device " + std::to_string(device_) + " granted " + formatMemorySize(bytes) +
        " that the host cannot back in full, as the chip would: its pages take host memory only as they are "
        "written, and a program that writes more device memory than the host has is stopped by the system. Set "
        "NPUSIM_HBM_SIZE below the host's memory to have such requests refused instead.";
    NPUSIM_PLOG(LogLevel::kWarning, "RUNTIME", note);
    std::fprintf(stderr, "%s\n", note.c_str());
  }
  return ptr;
}

uint64_t DeviceMemory::residentUncommitted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (const auto& [ptr, mapping] : mappings_) {
    if (mapping.uncommitted) total += residentBytes(ptr, mapping.bytes);
  }
  return total;
}

uint64_t DeviceMemory::residentUncommittedBytes() {
  uint64_t total = 0;
  for (const auto& slot : registry) {
    if (const DeviceMemory* memory = slot.load(std::memory_order_acquire)) total += memory->residentUncommitted();
  }
  return total;
}

void DeviceMemory::free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  bool hostCommitted = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = mappings_.find(ptr);
    if (it == mappings_.end()) {
      throw RuntimeError(ErrorCode::kRtMemoryFree, "aclrtFree",
                         hexPointer(ptr) + " is not an allocation of simulated device " +
                             std::to_string(device_));
    }
    if (it->second.bytes != bytes) {
      throw RuntimeError(ErrorCode::kRtMemoryFree, "aclrtFree",
                         hexPointer(ptr) + " holds " + std::to_string(it->second.bytes) +
                             " bytes, not " + std::to_string(bytes));
    }
    hostCommitted = it->second.hostCommitted;
    if (it->second.uncommitted) uncommittedMapped.fetch_sub(bytes, std::memory_order_relaxed);
    mappings_.erase(it);
  }
  ::munmap(ptr, bytes);
  used_.fetch_sub(bytes, std::memory_order_relaxed);
  if (hostCommitted) HostMemoryBudget::instance().release(bytes);
}

size_t DeviceMemory::freeBytes() const noexcept {
  size_t inUse = used();
  return inUse >= capacity_ ? 0 : capacity_ - inUse;
}

bool DeviceMemory::contains(const void* ptr) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [base, mapping] : mappings_) {
    const auto start = reinterpret_cast<uintptr_t>(base);
    if (address >= start && address < start + mapping.bytes) return true;
  }
  return false;
}

size_t DeviceMemory::bytesFrom(const void* ptr) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [base, mapping] : mappings_) {
    const auto start = reinterpret_cast<uintptr_t>(base);
    if (address >= start && address < start + mapping.bytes) return start + mapping.bytes - address;
  }
  return 0;
}

void DeviceMemory::lockForFork() { mutex_.lock(); }
void DeviceMemory::unlockAfterFork() { mutex_.unlock(); }

}  // namespace npusim::runtime
