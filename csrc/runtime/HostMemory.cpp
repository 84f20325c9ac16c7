#include "runtime/HostMemory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace npusim::runtime {
namespace {

std::string gib(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "none";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return text;
}

uint64_t readNumber(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return UINT64_MAX;
  try {
    return std::stoull(word);
  } catch (...) {
    return UINT64_MAX;
  }
}

}  // namespace

HostMemoryLimit hostMemoryLimit() {
  HostMemoryLimit limit;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") {
      limit.memAvailableBytes = value * 1024;
      break;
    }
  }
  const uint64_t maximum = readNumber("/sys/fs/cgroup/memory.max");
  const uint64_t current = readNumber("/sys/fs/cgroup/memory.current");
  if (maximum != UINT64_MAX && current != UINT64_MAX) {
    limit.cgroupRemainingBytes = maximum > current ? maximum - current : 0;
  }
  limit.availableBytes = std::min(limit.memAvailableBytes, limit.cgroupRemainingBytes);
  return limit;
}

std::string describeHostMemoryLimit(const HostMemoryLimit& limit) {
  return "host MemAvailable " + gib(limit.memAvailableBytes) + ", cgroup memory left " + gib(limit.cgroupRemainingBytes);
}

}  // namespace npusim::runtime
