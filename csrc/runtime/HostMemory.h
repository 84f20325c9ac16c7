// What the host can still give: simulated device memory is host memory, so a
// device allocation that fits the chip's HBM but not the host would end with
// the kernel's OOM killer instead of an error.
#pragma once

#include <cstdint>
#include <string>

namespace npusim::runtime {

struct HostMemoryLimit {
  uint64_t availableBytes = UINT64_MAX;  // the smaller of the two below
  uint64_t memAvailableBytes = UINT64_MAX;  // /proc/meminfo MemAvailable
  uint64_t cgroupRemainingBytes = UINT64_MAX;  // cgroup v2 memory.max - memory.current
};

// Read now (a few microseconds); UINT64_MAX where a source is absent.
HostMemoryLimit hostMemoryLimit();

// "MemAvailable 22.50 GiB, cgroup limit none" for messages.
std::string describeHostMemoryLimit(const HostMemoryLimit& limit);

}  // namespace npusim::runtime
