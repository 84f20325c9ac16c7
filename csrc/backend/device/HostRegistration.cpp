#include "backend/device/HostRegistration.h"

#include <iterator>
#include <map>
#include <mutex>

namespace npusim::backend {
namespace {

constexpr int kInvalidParameter = 107000;  // ACL_ERROR_RT_PARAM_INVALID

std::mutex mutex;
std::map<uintptr_t, size_t>& ranges() {
  static auto* registered = new std::map<uintptr_t, size_t>();  // start -> bytes
  return *registered;
}

// The registered range that holds `address`, or end().
std::map<uintptr_t, size_t>::iterator find(uintptr_t address) {
  auto& all = ranges();
  auto after = all.upper_bound(address);
  if (after == all.begin()) return all.end();
  auto candidate = std::prev(after);
  return address < candidate->first + candidate->second ? candidate : all.end();
}

}  // namespace

int registerHostMemory(uintptr_t address, size_t bytes) {
  if (address == 0 || bytes == 0) return kInvalidParameter;
  std::lock_guard<std::mutex> lock(mutex);
  auto& all = ranges();
  auto next = all.lower_bound(address);
  const bool overlapsNext = next != all.end() && next->first < address + bytes;
  if (overlapsNext || find(address) != all.end()) return kInvalidParameter;
  all.emplace(address, bytes);
  return 0;
}

int unregisterHostMemory(uintptr_t address) {
  std::lock_guard<std::mutex> lock(mutex);
  return ranges().erase(address) == 1 ? 0 : kInvalidParameter;
}

bool isRegisteredHostPointer(const void* ptr) {
  std::lock_guard<std::mutex> lock(mutex);
  return find(reinterpret_cast<uintptr_t>(ptr)) != ranges().end();
}

}  // namespace npusim::backend
