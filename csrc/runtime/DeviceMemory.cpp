#include "runtime/DeviceMemory.h"

#include <cstdint>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "runtime/Error.h"
#include "runtime/HostMemoryBudget.h"
#include "runtime/MemorySize.h"

namespace npusim::runtime {

namespace {

std::string hexPointer(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", ptr);
  return text;
}

}  // namespace

DeviceMemory::DeviceMemory(int device, size_t capacityBytes) : device_(device), capacity_(capacityBytes) {}

DeviceMemory::~DeviceMemory() {
  for (const auto& [ptr, mapping] : mappings_) {
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
    if (std::optional<std::string> refusal = HostMemoryBudget::instance().commit(bytes)) {
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
  auto undo = [&] {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    if (commitToHost) HostMemoryBudget::instance().release(bytes);
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
    mappings_.emplace(ptr, Mapping{bytes, commitToHost});
  } catch (...) {
    ::munmap(ptr, bytes);
    undo();
    throw;
  }
  return ptr;
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
