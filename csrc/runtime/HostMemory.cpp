#include "runtime/HostMemory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/EnvironmentVariables.h"

namespace npusim::runtime {
namespace {

std::string gib(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "none";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return text;
}

uint64_t readNumber(const std::string& path) {
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
  const std::optional<std::string> testingDir = environmentValue("NPUSIM_TESTING_CGROUP_DIR");
  if (testingDir && !testingDir->empty()) {
    limit.cgroupMaxBytes = readNumber(*testingDir + "/memory.max");
    limit.cgroupCurrentBytes = readNumber(*testingDir + "/memory.current");
  } else {
    limit.cgroupMaxBytes = readNumber("/sys/fs/cgroup/memory.max");
    limit.cgroupCurrentBytes = readNumber("/sys/fs/cgroup/memory.current");
    if (limit.cgroupMaxBytes == UINT64_MAX && limit.cgroupCurrentBytes == UINT64_MAX) {
      // cgroup v1: an unlimited group reports a huge page-rounded number,
      // which the min() below makes harmless.
      limit.cgroupMaxBytes = readNumber("/sys/fs/cgroup/memory/memory.limit_in_bytes");
      limit.cgroupCurrentBytes = readNumber("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    }
  }
  if (limit.cgroupMaxBytes != UINT64_MAX && limit.cgroupCurrentBytes != UINT64_MAX) {
    limit.cgroupRemainingBytes =
        limit.cgroupMaxBytes > limit.cgroupCurrentBytes ? limit.cgroupMaxBytes - limit.cgroupCurrentBytes : 0;
  } else {
    limit.cgroupMaxBytes = UINT64_MAX;
    limit.cgroupCurrentBytes = UINT64_MAX;
  }
  limit.availableBytes = std::min(limit.memAvailableBytes, limit.cgroupRemainingBytes);
  return limit;
}

std::string describeHostMemoryLimit(const HostMemoryLimit& limit) {
  std::string text = "host MemAvailable " + gib(limit.memAvailableBytes) + ", cgroup memory left " +
                     gib(limit.cgroupRemainingBytes);
  if (limit.cgroupMaxBytes != UINT64_MAX) text += " (memory.max " + gib(limit.cgroupMaxBytes) + ")";
  return text;
}

}  // namespace npusim::runtime
