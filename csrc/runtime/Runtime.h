// The simulated CANN runtime of one process: its devices and their resources.
//
// What aclInit / aclrtSetDevice / aclrtGetDevice give a real process: a set of
// visible devices, a current device per thread, and on each device (created
// lazily, on first use) its memory, caching allocator and streams. The host
// clock of the simulated timeline is process-wide.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/AllocatorConfig.h"
#include "runtime/CachingAllocator.h"
#include "runtime/DeviceMemory.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Error.h"
#include "runtime/Timeline.h"

namespace npusim::runtime {

struct DeviceProperties {
  std::string name;          // SoC name, "Ascend910B2"
  uint64_t totalMemory = 0;  // bytes the framework may use
  int cubeCoreNum = 0;
  int vectorCoreNum = 0;
  uint64_t l2CacheSize = 0;
  std::string uuid;
  int physicalId = 0;
};

class Runtime {
 public:
  // Built from the environment on first use (NPUSIM_SOC, NPUSIM_DEVICE_COUNT,
  // ASCEND_RT_VISIBLE_DEVICES, PYTORCH_NPU_ALLOC_CONF, STREAMS_PER_DEVICE,
  // NPUSIM_HBM_SIZE). Throws ConfigError on a malformed variable; a later
  // call tries again, so the process stays usable after fixing it.
  // Inline: every operator call asks for the runtime several times.
  static Runtime& instance() {
    Runtime* started = started_.load(std::memory_order_acquire);
    return started != nullptr ? *started : start();
  }
  // The runtime if it has started in this process, else nullptr; never starts it.
  static Runtime* existing() noexcept { return started_.load(std::memory_order_acquire); }
  // The number of visible devices. Before the runtime starts it is computed
  // from the environment at each call (NPUSIM_SOC, NPUSIM_DEVICE_COUNT,
  // ASCEND_RT_VISIBLE_DEVICES), as torch_npu's device_count() asks the driver
  // without initialising a device; once started, the runtime's frozen count.
  // Throws ConfigError on a malformed variable.
  static int visibleDeviceCount();

  const DeviceRegistry& registry() const noexcept { return registry_; }
  const ChipSpec& chip() const noexcept { return registry_.chip(); }
  int deviceCount() const noexcept { return registry_.deviceCount(); }
  // The device allocators' settings. PYTORCH_NPU_ALLOC_CONF (or
  // PYTORCH_ALLOC_CONF) is read at the first use of a device allocator, not
  // when the runtime starts, so a program may set it after asking for the
  // device count. Throws ConfigError; a later call reads the variable again.
  AllocatorConfig allocatorConfig();
  // torch.npu.memory._set_allocator_settings: parses `text` over the current
  // settings (max_split_size_mb, garbage_collection_threshold and
  // roundup_power2_divisions start from their defaults, as torch_npu's
  // parseArgs does) and applies the result to every device allocator, present
  // and future. Throws ConfigError naming the setting.
  void setAllocatorSettings(const std::string& text);
  // torch.npu.memory._record_memory_history: starts or stops the allocation
  // history of every device allocator, present and future (a device
  // initialized later starts recording with these settings).
  void recordAllocationHistory(bool enabled, StackRecorder recorder, size_t maxEntries, RecordContext when);
  bool allocationHistoryEnabled() const;
  uint64_t deviceCapacity() const noexcept { return capacity_; }
  HostClock& hostClock() noexcept { return hostClock_; }
  // TASK_QUEUE_ENABLE (0, 1 default, 2), forced to 0 by ASCEND_LAUNCH_BLOCKING=1.
  int taskQueueLevel() const noexcept { return taskQueueLevel_; }
  bool launchBlocking() const noexcept { return launchBlocking_; }

  // The calling thread's current device (0 until set); static so that asking
  // does not start the runtime.
  static int currentDevice() noexcept;
  // Validates (107001 on a bad id) and makes `device` current, initializing it.
  void setDevice(int device);
  // Makes `device` current without validation or initialization; for guards
  // restoring a device that was valid before.
  void setDeviceUnchecked(int device) noexcept;
  // Synchronizes the device and releases its cached memory; the device stays
  // usable (live allocations are kept).
  void resetDevice(int device);
  bool isDeviceInitialized(int device) const noexcept;

  // True in a child forked from this process after a device was initialized
  // (torch_npu's "bad fork"): every device entry point then throws
  // ForkedProcessError; frees of the parent's memory are ignored.
  // Static: asking never creates the runtime.
  static bool inForkedChild() noexcept { return forkedChild_.load(std::memory_order_relaxed); }
  // Throws ForkedProcessError in such a child.
  static void checkNotForkedChild() {
    if (inForkedChild()) throw ForkedProcessError();
  }

  // Per-device resources; initialize the device on first use. Inline: once
  // the device is initialized (and the allocators configured), an operator's
  // lookups are a table read, with the same fork check as the first one.
  CachingAllocator& allocator(int device) {
    if (CachingAllocator* ready = readyAllocator(device)) return *ready;
    return allocatorSlow(device);
  }
  DeviceTimeline& timeline(int device) {
    if (DeviceTimeline* ready = readyTimeline(device)) return *ready;
    return timelineSlow(device);
  }
  DeviceMemory& memory(int device);
  void synchronizeDevice(int device);
  // Estimate-only mode: device memory may exceed the capacity (see
  // DeviceMemory::setOvercommit), on every device, present and future.
  void setOvercommit(bool allowed);
  DeviceProperties properties(int device) const;

  // Publishes this process's use of its devices for npu-smi, at most every
  // 200 ms unless forced. Cheap to call often.
  void publishStatus(bool force = false);

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  Runtime();
  static Runtime& start();
  struct Device;
  Device& device(int index);
  // The resources of an initialized device, or nullptr (then the slow path
  // initializes it, or throws: a forked child, a bad id).
  CachingAllocator* readyAllocator(int index) const noexcept {
    if (inForkedChild() || static_cast<size_t>(index) >= readyCount_) return nullptr;
    if (!allocatorConfigured_.load(std::memory_order_acquire)) return nullptr;
    return ready_[static_cast<size_t>(index)].allocator.load(std::memory_order_acquire);
  }
  DeviceTimeline* readyTimeline(int index) const noexcept {
    if (inForkedChild() || static_cast<size_t>(index) >= readyCount_) return nullptr;
    return ready_[static_cast<size_t>(index)].timeline.load(std::memory_order_acquire);
  }
  CachingAllocator& allocatorSlow(int device);
  DeviceTimeline& timelineSlow(int device);

  static std::atomic<Runtime*> started_;
  static std::atomic<bool> forkedChild_;
  // pthread_atfork handlers: every runtime lock is held across fork(), in the
  // order the runtime nests them (init, allocators, timelines, memories), so
  // that a child never inherits a lock held by another thread of the parent.
  void forkPrepare();
  void forkParent();
  void forkChild();
  void unlockAfterFork();

  // Resolves the allocator settings from the environment if not yet done.
  // Caller holds configMutex_.
  const AllocatorConfig& resolvedAllocatorConfigLocked();

  DeviceRegistry registry_;
  mutable std::mutex configMutex_;
  std::optional<AllocatorConfig> allocatorConfig_;  // null until first read
  std::atomic<bool> allocatorConfigured_{false};
  struct HistorySettings {
    bool enabled = false;
    StackRecorder recorder;
    size_t maxEntries = 1;
    RecordContext when = RecordContext::kNever;
  };
  HistorySettings history_;  // guarded by initMutex_
  uint64_t capacity_;
  int streamsPerPool_;
  int taskQueueLevel_;
  bool launchBlocking_;
  HostClock hostClock_;
  mutable std::mutex initMutex_;
  std::vector<std::unique_ptr<Device>> devices_;  // index = logical id; null until initialized
  std::vector<std::atomic<Device*>> deviceTable_;  // lock-free lookup of initialized devices
  // The same, by resource (Device is defined in Runtime.cpp): set with deviceTable_.
  struct ReadyDevice {
    std::atomic<CachingAllocator*> allocator{nullptr};
    std::atomic<DeviceTimeline*> timeline{nullptr};
  };
  std::unique_ptr<ReadyDevice[]> ready_;
  size_t readyCount_ = 0;
  std::atomic<int64_t> nextPublishMs_{0};
  std::atomic<bool> overcommit_{false};
  std::vector<Device*> lockedForFork_;  // the devices forkPrepare locked
};

// Parses a byte size such as "68719476736", "64G", "512M" or "1.5T" (binary
// units). Throws ConfigError naming `variable`.
uint64_t parseByteSize(const std::string& text, const char* variable);

}  // namespace npusim::runtime
