#include "runtime/Runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "runtime/ConfigFile.h"
#include "runtime/EnvironmentVariables.h"
#include "runtime/Error.h"
#include "runtime/Plog.h"
#include "runtime/StatusRegistry.h"

namespace npusim::runtime {
namespace {

thread_local int tlsCurrentDevice = 0;

// Tells the caching allocator when cross-stream uses of a block have finished
// on the simulated timeline: a marker is the stream's clock when the use was
// recorded, complete once the host clock has passed it.
class TimelineStreamUseTracker final : public StreamUseTracker {
 public:
  explicit TimelineStreamUseTracker(DeviceTimeline& timeline) : timeline_(timeline) {}
  uint64_t markStreamUse(StreamId stream) override { return timeline_.streamClock(stream); }
  bool isComplete(uint64_t marker) override { return marker <= timeline_.hostClock().now(); }
  void synchronizeDevice() override { timeline_.synchronize(); }

 private:
  DeviceTimeline& timeline_;
};

int streamsPerPoolFromEnvironment() {
  // torch_npu accepts 8 or 32 and falls back to 32 with a warning otherwise.
  const auto text = environmentValue("STREAMS_PER_DEVICE");
  if (!text || text->empty() || *text == "32") return DeviceTimeline::kDefaultStreamsPerPool;
  if (*text == "8") return 8;
  NPUSIM_PLOG(LogLevel::kWarning, "RUNTIME",
              "STREAMS_PER_DEVICE=" + *text + " is invalid, only 8 or 32 are supported; using 32");
  return DeviceTimeline::kDefaultStreamsPerPool;
}

// torch_npu's checks of its execution switches (OptionsManager), with its texts.
int taskQueueLevelFromEnvironment() {
  const auto text = environmentValue("TASK_QUEUE_ENABLE");
  if (!text || text->empty()) return 1;
  if (*text == "0" || *text == "1" || *text == "2") return (*text)[0] - '0';
  throw ConfigError("TASK_QUEUE_ENABLE should be 0, 1 or 2");
}

bool launchBlockingFromEnvironment() {
  const auto text = environmentValue("ASCEND_LAUNCH_BLOCKING");
  if (!text || text->empty() || *text == "0") return false;
  if (*text == "1") return true;
  throw ConfigError("ASCEND_LAUNCH_BLOCKING should be 0 or 1");
}

std::string processName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

int64_t unixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

uint64_t parseByteSize(const std::string& text, const char* variable) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  std::string unit(end);
  double scale = 1;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KiB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MB" || unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GB" || unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TB" || unit == "TiB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    end = nullptr;
  }
  if (end == nullptr || end == text.c_str() || !std::isfinite(number) || number <= 0 || number * scale >= 0x1p62) {
    throw ConfigError(std::string(variable) + "=" + printableText(text) +
                      " is invalid: expected a positive size in bytes, optionally with a K, M, G or T suffix");
  }

  return static_cast<uint64_t>(number * scale);
}

struct Runtime::Device {
  Device(int index, uint64_t capacity, HostClock& host, int streamsPerPool, const AllocatorConfig& config)
      : memory(index, capacity), timeline(index, host, streamsPerPool), tracker(timeline),
        allocator(index, memory, tracker, config) {}
  DeviceMemory memory;
  DeviceTimeline timeline;
  TimelineStreamUseTracker tracker;
  CachingAllocator allocator;
  // Reserved bytes at the last synchronize: a change is published at once (npu-smi's
  // process memory), steady state at most every 200 ms (a publish costs a file write).
  std::atomic<uint64_t> reservedAtLastSync{UINT64_MAX};
};

std::atomic<Runtime*> Runtime::started_{nullptr};
std::atomic<bool> Runtime::forkedChild_{false};

Runtime& Runtime::start() {
  // Constructed on first use and deliberately never destroyed: tensors freed
  // during interpreter shutdown still return their memory to it.
  static Runtime* runtime = [] {
    auto* created = new Runtime();
    started_.store(created, std::memory_order_release);
    return created;
  }();
  return *runtime;
}

int Runtime::visibleDeviceCount() {
  if (Runtime* started = existing()) return started->deviceCount();
  return DeviceRegistry::fromEnvironment().deviceCount();
}

const AllocatorConfig& Runtime::resolvedAllocatorConfigLocked() {
  if (!allocatorConfig_) allocatorConfig_ = AllocatorConfig::fromEnvironment();
  return *allocatorConfig_;
}

AllocatorConfig Runtime::allocatorConfig() {
  std::lock_guard<std::mutex> lock(configMutex_);
  return resolvedAllocatorConfigLocked();
}

void Runtime::setAllocatorSettings(const std::string& text) {
  std::lock_guard<std::mutex> devicesLock(initMutex_);
  std::lock_guard<std::mutex> lock(configMutex_);
  AllocatorConfig updated = AllocatorConfig::parseOnto(resolvedAllocatorConfigLocked(), text,
                                                       "torch.npu.memory._set_allocator_settings");
  allocatorConfig_ = std::move(updated);
  for (auto& d : devices_) {
    if (d) d->allocator.reconfigure(*allocatorConfig_);
  }
  allocatorConfigured_.store(true, std::memory_order_release);
}

Runtime::Runtime()
    : registry_(DeviceRegistry::fromEnvironment()),
      capacity_(registry_.chip().totalMemoryBytes),
      streamsPerPool_(streamsPerPoolFromEnvironment()),
      taskQueueLevel_(taskQueueLevelFromEnvironment()),
      launchBlocking_(launchBlockingFromEnvironment()),
      devices_(static_cast<size_t>(registry_.deviceCount())),
      deviceTable_(static_cast<size_t>(registry_.deviceCount())),
      ready_(new ReadyDevice[static_cast<size_t>(registry_.deviceCount())]),
      readyCount_(static_cast<size_t>(registry_.deviceCount())) {
  if (auto hbm = environmentValue("NPUSIM_HBM_SIZE"); hbm && !hbm->empty()) {
    capacity_ = parseByteSize(*hbm, "NPUSIM_HBM_SIZE");
    // A fraction of a byte (0.5) or a few bytes would make every allocation fail.
    constexpr uint64_t kMinimumHbm = uint64_t{1} << 20;
    if (capacity_ < kMinimumHbm) {
      throw ConfigError("NPUSIM_HBM_SIZE=" + printableText(*hbm) + " is invalid: the size must be at least 1M (" +
                        std::to_string(kMinimumHbm) + " bytes)");
    }
  }
  for (auto& slot : deviceTable_) slot.store(nullptr, std::memory_order_relaxed);
  // A malformed ASCEND_GLOBAL_LOG_LEVEL / ASCEND_SLOG_PRINT_TO_STDOUT is an
  // error of the runtime's start, as on the real stack.
  Plog::instance().validateConfiguration();
  // ASCEND_LAUNCH_BLOCKING=1 makes every launch synchronous: no task queue.
  if (launchBlocking_) taskQueueLevel_ = 0;
  lockedForFork_.reserve(devices_.size());
  // Registered after the plog's handlers (validateConfiguration created the
  // plog writer), so prepare runs first here and the plog lock, which the
  // runtime takes inside its own locks, is taken after them.
  ::pthread_atfork([] { Runtime::instance().forkPrepare(); }, [] { Runtime::instance().forkParent(); },
                   [] { Runtime::instance().forkChild(); });
}

void Runtime::forkPrepare() {
  initMutex_.lock();
  lockedForFork_.clear();
  for (auto& d : devices_) {
    if (d) lockedForFork_.push_back(d.get());
  }
  for (Device* d : lockedForFork_) d->allocator.lockForFork();
  for (Device* d : lockedForFork_) d->timeline.lockForFork();
  for (Device* d : lockedForFork_) d->memory.lockForFork();
}

void Runtime::unlockAfterFork() {
  for (Device* d : lockedForFork_) d->memory.unlockAfterFork();
  for (Device* d : lockedForFork_) d->timeline.unlockAfterFork();
  for (Device* d : lockedForFork_) d->allocator.unlockAfterFork();
  initMutex_.unlock();
}


void Runtime::forkParent() { unlockAfterFork(); }

void Runtime::forkChild() {
  // A child of a process that never initialized a device may use devices of
  // its own (as a CUDA child may); otherwise it is a bad fork.
  if (!lockedForFork_.empty()) forkedChild_.store(true, std::memory_order_relaxed);
  unlockAfterFork();
}

int Runtime::currentDevice() noexcept { return tlsCurrentDevice; }

void Runtime::setDevice(int index) {
  registry_.checkDevice(index, "c10_npu::SetDevice(device_id_)");
  device(index);
  tlsCurrentDevice = index;
}

void Runtime::setDeviceUnchecked(int index) noexcept { tlsCurrentDevice = index; }

Runtime::Device& Runtime::device(int index) {
  checkNotForkedChild();
  if (index >= 0 && index < static_cast<int>(deviceTable_.size())) {
    if (Device* ready = deviceTable_[static_cast<size_t>(index)].load(std::memory_order_acquire)) return *ready;
  }
  registry_.checkDevice(index, "aclrtSetDevice");
  {
    std::lock_guard<std::mutex> lock(initMutex_);
    auto& slot = devices_[static_cast<size_t>(index)];
    if (!slot) {
      AllocatorConfig config;
      {
        std::lock_guard<std::mutex> configLock(configMutex_);
        if (allocatorConfig_) config = *allocatorConfig_;
      }
      slot = std::make_unique<Device>(index, capacity_, hostClock_, streamsPerPool_, config);
      slot->memory.setOvercommit(overcommit_.load());
      if (history_.enabled) {
        slot->allocator.recordHistory(true, history_.recorder, history_.maxEntries, history_.when);
      }
      ready_[static_cast<size_t>(index)].allocator.store(&slot->allocator, std::memory_order_release);
      ready_[static_cast<size_t>(index)].timeline.store(&slot->timeline, std::memory_order_release);
      deviceTable_[static_cast<size_t>(index)].store(slot.get(), std::memory_order_release);
      NPUSIM_PLOG(LogLevel::kInfo, "RUNTIME",
                  "device " + std::to_string(index) + " (physical " + std::to_string(registry_.physicalId(index)) +
                      ", " + registry_.chip().socName + ") initialized");
    }
  }
  publishStatus(true);
  return *deviceTable_[static_cast<size_t>(index)].load(std::memory_order_acquire);
}

void Runtime::recordAllocationHistory(bool enabled, StackRecorder recorder, size_t maxEntries, RecordContext when) {
  std::lock_guard<std::mutex> lock(initMutex_);
  history_ = HistorySettings{enabled, enabled ? std::move(recorder) : StackRecorder(), maxEntries, when};
  for (auto& created : devices_) {
    if (created) created->allocator.recordHistory(enabled, history_.recorder, maxEntries, when);
  }
}

bool Runtime::allocationHistoryEnabled() const {
  std::lock_guard<std::mutex> lock(initMutex_);
  return history_.enabled;
}

bool Runtime::isDeviceInitialized(int index) const noexcept {
  return index >= 0 && index < static_cast<int>(deviceTable_.size()) &&
         deviceTable_[static_cast<size_t>(index)].load(std::memory_order_acquire) != nullptr;
}

CachingAllocator& Runtime::allocatorSlow(int index) {
  Device& d = device(index);
  if (!allocatorConfigured_.load(std::memory_order_acquire)) {
    // First use of a device allocator in the process: the settings are read
    // now (a malformed variable throws here and is read again next time).
    std::lock_guard<std::mutex> devicesLock(initMutex_);
    std::lock_guard<std::mutex> lock(configMutex_);
    if (!allocatorConfigured_.load(std::memory_order_relaxed)) {
      const AllocatorConfig& config = resolvedAllocatorConfigLocked();
      for (auto& created : devices_) {
        if (created) created->allocator.reconfigure(config);
      }
      allocatorConfigured_.store(true, std::memory_order_release);
    }
  }
  return d.allocator;
}
DeviceTimeline& Runtime::timelineSlow(int index) { return device(index).timeline; }
DeviceMemory& Runtime::memory(int index) { return device(index).memory; }

void Runtime::synchronizeDevice(int index) {
  Device& d = device(index);
  d.timeline.synchronize();
  // A synchronize is a quiescent point (StatusRegistry.h): publish, so that npu-smi shows the
  // memory a program holds while it waits, even when it allocates too rarely to publish.
  const uint64_t reserved = d.allocator.reservedBytes();
  publishStatus(d.reservedAtLastSync.exchange(reserved, std::memory_order_relaxed) != reserved);
}

void Runtime::setOvercommit(bool allowed) {
  std::lock_guard<std::mutex> lock(initMutex_);
  overcommit_.store(allowed);
  for (auto& d : devices_) {
    if (d) d->memory.setOvercommit(allowed);
  }
}

void Runtime::resetDevice(int index) {
  Device& d = device(index);
  d.timeline.synchronize();
  d.allocator.emptyCache();
  publishStatus(true);
}

DeviceProperties Runtime::properties(int index) const {
  registry_.checkDevice(index, "aclrtGetDeviceInfo");
  DeviceProperties p;
  p.name = chip().socName;
  p.totalMemory = capacity_;
  p.cubeCoreNum = chip().cubeCores;
  p.vectorCoreNum = chip().vectorCores;
  p.l2CacheSize = chip().l2CacheBytes;
  p.uuid = registry_.uuid(index);
  p.physicalId = registry_.physicalId(index);
  return p;
}

void Runtime::publishStatus(bool force) {
  const int64_t now = unixMillis();
  int64_t deadline = nextPublishMs_.load(std::memory_order_relaxed);
  if (!force && now < deadline) return;
  if (!nextPublishMs_.compare_exchange_strong(deadline, now + 200) && !force) return;
  ProcessStatus status;
  status.pid = static_cast<int>(::getpid());
  status.processName = processName();
  status.socName = chip().socName;
  status.updatedUnixMs = static_cast<uint64_t>(now);
  for (size_t i = 0; i < deviceTable_.size(); ++i) {
    Device* d = deviceTable_[i].load(std::memory_order_acquire);
    if (d == nullptr) continue;
    DeviceUsage usage;
    usage.physicalDevice = registry_.physicalId(static_cast<int>(i));
    // Device memory taken outside the caching allocator (AscendCL's aclrtMalloc) is in use by
    // the program and held by the process, as npu-smi counts it on the real stack.
    const uint64_t cachingReserved = d->allocator.reservedBytes();
    const uint64_t outsideAllocator = d->memory.used() > cachingReserved ? d->memory.used() - cachingReserved : 0;
    usage.memoryBytes = d->allocator.allocatedBytes() + outsideAllocator;
    usage.reservedBytes = cachingReserved + outsideAllocator;
    usage.busyNs = d->timeline.busyNs();
    usage.simulatedNs = std::max<uint64_t>(d->timeline.hostClock().now(), d->timeline.deviceClock());
    status.devices.push_back(usage);
  }
  try {
    StatusPublisher::instance().publish(status, true);
  } catch (const std::exception& e) {
    // Status is a convenience for npu-smi; failing to write it must not stop the program.
    NPUSIM_PLOG(LogLevel::kWarning, "RUNTIME", std::string("cannot publish status: ") + e.what());
  }
}

}  // namespace npusim::runtime
