#include "runtime/DeviceMemory.h"

#include <cstdint>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/Error.h"
#include "runtime/HostMemory.h"

namespace npusim::runtime {

namespace {

constexpr size_t kHostCheckBytes = size_t{64} << 20;

std::string hexPointer(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", ptr);
  return text;
}

}  // namespace

DeviceMemory::DeviceMemory(int device, size_t capacityBytes) : device_(device), capacity_(capacityBytes) {}

DeviceMemory::~DeviceMemory() {
  for (const auto& [ptr, bytes] : mappings_) {
    ::munmap(ptr, bytes);
  }
}

void* DeviceMemory::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  // Reserve the capacity first so that concurrent callers cannot overshoot.
  size_t current = used_.load(std::memory_order_relaxed);
  do {
    if (!overcommit() && (bytes > capacity_ || current > capacity_ - bytes)) return nullptr;
  } while (!used_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));

  // Real data (not estimate-only): a block the host cannot back would end
  // with the kernel's OOM killer when written. Checked for large blocks only,
  // where it matters and where reading /proc costs nothing in comparison.
  if (!overcommit() && bytes >= kHostCheckBytes) {
    const HostMemoryLimit host = hostMemoryLimit();
    if (bytes > host.availableBytes) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);
      throw RuntimeError(ErrorCode::kRtMemoryAllocation, "aclrtMalloc",
                         "simulated device " + std::to_string(device_) + " memory is host memory, and the host cannot give " +
                             std::to_string(bytes) + " bytes (" + describeHostMemoryLimit(host) +
                             "; device capacity " + std::to_string(capacity_) +
                             " bytes). Set NPUSIM_HBM_SIZE below the host's memory, or run in estimate-only mode "
                             "(npusim.estimate()), which needs no host memory for device data.");
    }
  }
  void* ptr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ptr == MAP_FAILED) {
    int error = errno;
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    throw RuntimeError(ErrorCode::kRtMemoryAllocation, "aclrtMalloc",
                       "the host could not map " + std::to_string(bytes) + " bytes for simulated device " +
                           std::to_string(device_) + ": " + std::strerror(error));
  }
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    mappings_.emplace(ptr, bytes);
  } catch (...) {
    ::munmap(ptr, bytes);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    throw;
  }
  return ptr;
}

void DeviceMemory::free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = mappings_.find(ptr);
    if (it == mappings_.end()) {
      throw RuntimeError(ErrorCode::kRtMemoryFree, "aclrtFree",
                         hexPointer(ptr) + " is not an allocation of simulated device " +
                             std::to_string(device_));
    }
    if (it->second != bytes) {
      throw RuntimeError(ErrorCode::kRtMemoryFree, "aclrtFree",
                         hexPointer(ptr) + " holds " + std::to_string(it->second) +
                             " bytes, not " + std::to_string(bytes));
    }
    mappings_.erase(it);
  }
  ::munmap(ptr, bytes);
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

size_t DeviceMemory::freeBytes() const noexcept {
  size_t inUse = used();
  return inUse >= capacity_ ? 0 : capacity_ - inUse;
}

bool DeviceMemory::contains(const void* ptr) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [base, bytes] : mappings_) {
    const auto start = reinterpret_cast<uintptr_t>(base);
    if (address >= start && address < start + bytes) return true;
  }
  return false;
}

void DeviceMemory::lockForFork() { mutex_.lock(); }
void DeviceMemory::unlockAfterFork() { mutex_.unlock(); }

}  // namespace npusim::runtime
