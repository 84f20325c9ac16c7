// The npu device in torch.profiler: a Kineto activity profiler registered
// through PyTorch's PrivateUse1 profiler registry (REGISTER_PRIVATEUSE1_PROFILER,
// torch/csrc/profiler/standalone/privateuse1_profiler.h), the path torch 2.13
// offers for torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1]).
//
// Each launch becomes two activities, as CUDA's do: a host-side runtime call
// inside the aten operator that issued it, and the kernel (or copy) on its
// stream, joined by a flow. The kernel's duration is the modelled device
// time; its place on the wall clock is the launch time plus the simulated
// queueing delay, pushed back so that a stream never overlaps itself (the
// real host is npusim's CPU, so only durations and order are the chip's).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include "profiler/ActivityRecorder.h"
#include "perf/Types.h"
#include "runtime/PlacementTable.h"

namespace npusim::profiler {
namespace {

using libkineto::ActivityType;
using libkineto::GenericTraceActivity;

const char* placementName(uint8_t placement) {
  switch (static_cast<runtime::Placement>(placement)) {
    case runtime::Placement::kAiCore: return "AI_CORE";
    case runtime::Placement::kAiCpu: return "AI_CPU";
    case runtime::Placement::kCpuFallback: return "CPU_FALLBACK";
  }
  return "AI_CORE";
}

const char* unitName(uint8_t unit) {
  switch (static_cast<perf::Unit>(unit)) {
    case perf::Unit::kCube: return "Cube";
    case perf::Unit::kVector: return "Vector";
    case perf::Unit::kAiCpu: return "AI CPU";
    case perf::Unit::kCpuFallback: return "CPU fallback";
    case perf::Unit::kTransfer: return "Transfer";
    case perf::Unit::kNone: return "None";
  }
  return "None";
}

// The kernel's name: the operator's without its namespace and overload
// ("aten::add.Tensor" -> "add"), as a task name on the chip's stream.
std::string kernelName(const libkineto::ITraceActivity* op) {
  if (op == nullptr) return "kernel";
  std::string name = op->name();
  if (const auto colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  if (const auto dot = name.find('.'); dot != std::string::npos) name.resize(dot);
  return name;
}

// Kineto writes quoted metadata into the JSON trace as it is.
std::string jsonEscaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back(' ');
      continue;
    }
    out.push_back(c);
  }
  return out;
}

class NpuProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  // Kineto configures every registered profiler; one asked only for CPU
  // activities (no ProfilerActivity.PrivateUse1) records nothing.
  explicit NpuProfilerSession(bool enabled) : enabled_(enabled) {}

  // A CPU-only trace configures no profiler but starts the sessions Kineto
  // still holds from the last trace: a session records for one trace only.
  void start() override {
    status_ = libkineto::TraceStatus::RECORDING;
    if (enabled_ && !used_) startRecording();
  }
  void stop() override {
    if (enabled_ && !used_) recorded_ = stopRecording();
    used_ = true;
    status_ = libkineto::TraceStatus::PROCESSING;
  }
  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback getLinkedActivity,
                    int64_t startTime, int64_t endTime) override {
    // Kineto keeps the activities (its loggers hold pointers to them) by
    // taking this buffer from getTraceBuffer() once they are logged.
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(startTime, endTime, "npu");
    buffer_->gpuOpCount = 0;
    auto add = [this](ActivityType type, std::string name) -> GenericTraceActivity& {
      buffer_->emplace_activity(buffer_->span, type, std::move(name));
      return *buffer_->activities.back();
    };
    std::map<std::pair<int, int64_t>, int64_t> streamEnd;  // wall end of the last task per stream
    uint32_t flow = 0;
    // Host-side activities sit in this process's row, on the issuing thread.
    const int32_t processId = static_cast<int32_t>(::getpid());
    for (const RecordedActivity& entry : recorded_) {
      const backend::DeviceActivity& activity = entry.activity;
      const libkineto::ITraceActivity* op =
          entry.correlation != 0 ? getLinkedActivity(static_cast<int32_t>(entry.correlation)) : nullptr;
      if (activity.kind == backend::DeviceActivityKind::kSynchronize) {
        auto& sync = add(ActivityType::PRIVATEUSE1_RUNTIME,
                                                    "aclrtSynchronizeStream");
        sync.startTime = entry.wallNs - 1000;
        sync.endTime = entry.wallNs;
        sync.threadId = entry.threadId;
        sync.resource = entry.threadId;
        sync.device = processId;
        sync.linked = op;
        sync.addMetadataQuoted("cause", jsonEscaped(activity.what));
        sync.addMetadataQuoted("source", jsonEscaped(activity.source));
        continue;
      }
      ++flow;
      const bool collective = activity.kind == backend::DeviceActivityKind::kCollective;
      const bool kernel = activity.kind == backend::DeviceActivityKind::kKernel || collective;
      const char* launchName = collective ? "HcclLaunch"
                               : kernel ? "aclnnLaunchKernel"
                               : activity.kind == backend::DeviceActivityKind::kCopyDeviceToHost ? "aclrtMemcpy"
                                                                                                 : "aclrtMemcpyAsync";
      // The host side: the launch, inside the operator that issued it.
      auto& launch = add(ActivityType::PRIVATEUSE1_RUNTIME, launchName);
      const int64_t dispatch = std::min<int64_t>(static_cast<int64_t>(activity.dispatchNs), 1000);
      launch.startTime = entry.wallNs - dispatch;
      launch.endTime = entry.wallNs;
      launch.threadId = entry.threadId;
      launch.resource = entry.threadId;
      launch.device = processId;
      launch.id = static_cast<int32_t>(entry.correlation);
      launch.linked = op;
      launch.flow.id = flow;
      launch.flow.type = libkineto::kLinkAsyncCpuGpu;
      launch.flow.start = 1;

      // The device side: the task on its stream.
      std::string name;
      switch (activity.kind) {
        case backend::DeviceActivityKind::kCopyHostToDevice: name = "Memcpy HtoD"; break;
        case backend::DeviceActivityKind::kCopyDeviceToHost: name = "Memcpy DtoH"; break;
        case backend::DeviceActivityKind::kCopyDeviceToDevice: name = "Memcpy DtoD"; break;
        case backend::DeviceActivityKind::kCollective: name = "hcom_" + activity.what; break;
        default: name = activity.what.empty() ? kernelName(op) : activity.what; break;
      }
      auto& task = add(kernel ? ActivityType::CONCURRENT_KERNEL : ActivityType::GPU_MEMCPY,
                                                  std::move(name));
      const int64_t queued = activity.startNs > activity.hostNs
                                 ? static_cast<int64_t>(activity.startNs - activity.hostNs) : 0;
      int64_t& previousEnd = streamEnd[{activity.device, activity.stream}];
      task.startTime = std::max(entry.wallNs + queued, previousEnd);
      task.endTime = task.startTime + static_cast<int64_t>(activity.durationNs);
      previousEnd = task.endTime;
      task.device = activity.device;
      task.resource = static_cast<int32_t>(activity.stream);
      task.threadId = static_cast<int32_t>(activity.stream);
      task.id = static_cast<int32_t>(entry.correlation);
      task.linked = op;
      task.flow.id = flow;
      task.flow.type = libkineto::kLinkAsyncCpuGpu;
      task.flow.start = 0;
      task.addMetadata("device", activity.device);
      task.addMetadata("stream", activity.stream);
      task.addMetadata("correlation", entry.correlation);
      task.addMetadataQuoted("accelerator core", collective ? "COMMUNICATION" : placementName(activity.placement));
      task.addMetadataQuoted("unit", collective ? "Communication" : unitName(activity.unit));
      task.addMetadata("simulated start us", static_cast<double>(activity.startNs) / 1000.0);
      task.addMetadata("simulated duration us", static_cast<double>(activity.durationNs) / 1000.0);
      task.addMetadata("bytes", activity.bytes);
      if (!activity.source.empty()) task.addMetadataQuoted("source", jsonEscaped(activity.source));
      streams_.insert({activity.device, activity.stream});
    }
    for (const auto& activity : buffer_->activities) logger.handleGenericActivity(*activity);
    recorded_.clear();
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{0, 0, "NPU 0", "npu"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& [device, stream] : streams_) {
      out.push_back(libkineto::ResourceInfo{stream, stream, device, "Stream " + std::to_string(stream)});
    }
    return out;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { pushCorrelation(id); }
  void popCorrelationId() override { popCorrelation(); }

 private:
  bool enabled_;
  bool used_ = false;
  std::vector<RecordedActivity> recorded_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::set<std::pair<int, int64_t>> streams_;
};

class NpuActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& types,
                                                                 const libkineto::Config&) override {
    return std::make_unique<NpuProfilerSession>(wanted(types));
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t, const std::set<ActivityType>& types,
                                                                 const libkineto::Config&) override {
    return std::make_unique<NpuProfilerSession>(wanted(types));
  }

 private:
  // A CPU-only trace asks for the host runtime types as well (torch 2.13's
  // CPU set holds them); only a device activity adds the kernel types.
  static bool wanted(const std::set<ActivityType>& types) {
    return types.count(ActivityType::CONCURRENT_KERNEL) > 0;
  }

  std::string name_{"npusim"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::PRIVATEUSE1_RUNTIME, ActivityType::PRIVATEUSE1_DRIVER};
};

REGISTER_PRIVATEUSE1_PROFILER(NpuActivityProfiler);

}  // namespace
}  // namespace npusim::profiler
