// Live status of the processes that use simulated devices, read by the
// `npu-smi` look-alike (torch_npu contract §18: per-device HBM usage, AICore
// busy, and the process table).
//
// Directory
//   NPUSIM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/npusim, else /tmp/npusim-<uid>.
//   Created private (mode 0700, owned by the user, checked as by
//   ensurePrivateDirectory), so a user sees only their own processes, unlike
//   the real npu-smi, which sees every process on the machine.
//
// Files
//   One file per process, named "<pid>.status", replaced atomically (a reader
//   sees the old or the new file, never a mix) and removed at normal exit.
//   Temporary files of the atomic replace start with '.', and are not status
//   files. SIGINT and SIGTERM remove the file too (the publisher's handlers
//   chain to the previous ones, so Python's KeyboardInterrupt is kept). A
//   process killed otherwise (SIGKILL, a crash) leaves its file behind;
//   readLiveStatuses skips it because its pid is gone (or reused) and removes it.
//
// Format 1 (ASCII text, '\n' after every line, the last one included)
//   # npusim live status; format described in csrc/runtime/StatusRegistry.h
//   format=1
//   pid=12345
//   process_start_ticks=8803316
//   process_name=python3
//   soc_name=Ascend910B2
//   updated_unix_ms=1750000000123
//   device=0 memory_bytes=1048576 reserved_bytes=2097152 busy_ns=123456789 simulated_ns=300000000
//   device=1 memory_bytes=0 reserved_bytes=0 busy_ns=0 simulated_ns=0
//
//   - Lines starting with '#' and empty lines are comments.
//   - Other lines are key=value; the value is the rest of the line (it may hold
//     spaces). Writers replace control characters in names with '?'.
//   - Numbers are unsigned decimal. Required: format (must be 1), pid,
//     updated_unix_ms. Optional: process_name, soc_name (default empty),
//     process_start_ticks (default 0 = unknown).
//   - process_start_ticks is field 22 of /proc/<pid>/stat (start time after
//     boot, in clock ticks); readers compare it with the live process to tell a
//     reused pid from the publisher.
//   - One device line per device the process uses: space-separated key=value
//     tokens; device (the physical device id), memory_bytes (allocated by
//     tensors), reserved_bytes (held by the caching allocator, what npu-smi
//     shows as the process's memory) and busy_ns (simulated device time the
//     process has kept the device busy) are required. simulated_ns (optional,
//     0 = unknown) is the process's simulated time on the device (the later of
//     its host and device clocks), so that busy_ns / simulated_ns over a
//     sampling window is the load the real chip would show.
//   - Readers ignore unknown keys and unknown device tokens, so later versions
//     may add fields without changing the format number.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npusim::runtime {

struct DeviceUsage {
  int physicalDevice;
  uint64_t memoryBytes;
  uint64_t reservedBytes;
  uint64_t busyNs;
  uint64_t simulatedNs = 0;  // 0: not published (an older writer)
};

struct ProcessStatus {
  int pid;
  std::string processName;
  std::string socName;
  uint64_t updatedUnixMs;
  std::vector<DeviceUsage> devices;
};

// NPUSIM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/npusim, else /tmp/npusim-<uid>
// (an empty variable counts as unset). Creates nothing.
std::string statusDirectory();

// The text of a status file (format above).
std::string formatStatusFile(const ProcessStatus& status, uint64_t processStartTicks);

struct ParsedStatusFile {
  ProcessStatus status;
  uint64_t processStartTicks;
};

// Parses a status file; nullopt when it is malformed.
std::optional<ParsedStatusFile> parseStatusFile(std::string_view text);

// Field 22 of /proc/<pid>/stat, or nullopt when it cannot be read.
std::optional<uint64_t> processStartTicks(int pid);

// The status of every live process in `directory`, ordered by pid. Skips,
// without failing: files whose process is gone (kill(pid, 0) fails with ESRCH
// or EPERM, the process is a zombie, or its start time differs from the
// recorded one), malformed files, files whose pid differs from their name,
// symbolic links, non-regular files and files owned by another user; the file
// of a process that is gone is also removed (reaped). A missing
// directory gives an empty list; a directory that fails the private-directory
// checks (a link, another owner, group/other writable) raises
// RuntimeError(kRtNoPermission).
std::vector<ProcessStatus> readLiveStatuses(const std::string& directory = statusDirectory());

// Publishes this process's status file. Thread-safe.
class StatusPublisher {
 public:
  static constexpr std::chrono::milliseconds kMinimumInterval{200};

  // The process-wide publisher; never destroyed.
  static StatusPublisher& instance();

  // Writes `status` to <statusDirectory()>/<pid>.status, atomically. The file
  // always describes the calling process: status.pid is replaced by getpid(),
  // an empty processName by the process's name and a zero updatedUnixMs by the
  // current time. Unless `force`, writes at most once per kMinimumInterval: a
  // throttled status is kept and written by the next publish or flush() once
  // the interval has passed, so callers should force (or flush) at quiescent
  // points such as a synchronize, so that the file is not left behind the
  // process's real state. Never throws: if the file cannot be written, one
  // warning goes to stderr (once per run of failures). Returns whether the
  // file was written by this call.
  bool publish(const ProcessStatus& status);
  bool publish(const ProcessStatus& status, bool force);

  // Writes the status kept by a throttled publish, if any, now.
  bool flush();

  // Removes this process's file (if this process wrote one) and forgets any
  // throttled status; a later publish starts again. Registered with atexit()
  // on the first successful publish. A forked child never removes its parent's
  // file. Never throws.
  void withdraw() noexcept;

  StatusPublisher(const StatusPublisher&) = delete;
  StatusPublisher& operator=(const StatusPublisher&) = delete;

 private:
  StatusPublisher() = default;
  bool writeLocked(ProcessStatus status);
  void forkPrepare();
  void forkParent();
  void forkChild();

  std::mutex mutex_;
  std::optional<ProcessStatus> pending_;
  std::chrono::steady_clock::time_point lastWrite_{};
  bool hasWritten_ = false;       // lastWrite_ is meaningful
  int publishedPid_ = -1;         // the pid whose file we wrote, -1 if none
  std::string publishedDirectory_;
  bool warned_ = false;
  bool exitHandlerRegistered_ = false;
  int startTicksPid_ = -1;  // the pid processStartTicks_ belongs to
  uint64_t processStartTicks_ = 0;
};

}  // namespace npusim::runtime
