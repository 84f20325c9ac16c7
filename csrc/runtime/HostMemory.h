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
  uint64_t cgroupRemainingBytes = UINT64_MAX;  // cgroup memory.max - memory.current
  uint64_t cgroupMaxBytes = UINT64_MAX;  // cgroup memory.max
  uint64_t cgroupCurrentBytes = UINT64_MAX;  // cgroup memory.current
};

// Read now (a few microseconds); UINT64_MAX where a source is absent. The
// cgroup files are read from /sys/fs/cgroup (v2, else v1's memory controller),
// or, as a testing knob, from the directory NPUSIM_TESTING_CGROUP_DIR names
// (files memory.max and memory.current), so that tests can simulate a small
// host without allocating its memory.
HostMemoryLimit hostMemoryLimit();

// "host MemAvailable 22.50 GiB, cgroup memory left none" for messages.
std::string describeHostMemoryLimit(const HostMemoryLimit& limit);

}  // namespace npusim::runtime
