#include "acl/aclnn/OpExecutor.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "acl/aclnn/AclnnStatus.h"
#include "acl/aclnn/DeviceTensors.h"
#include "acl/aclnn/OperatorLaunch.h"
#include "acl/runtime/InternalApi.h"
#include "backend/timing/GraphLaunch.h"

// The executor of one aclnnXxxGetWorkspaceSize call.
struct aclOpExecutor {
  std::string api;  // the phase-two call it belongs to, "aclnnAdd"
  std::vector<npusim::aclnn::TensorSlot> slots;
  std::vector<npusim::aclnn::WorkspaceBuffer> buffers;
  uint64_t workspaceBytes = 0;
  npusim::aclnn::LaunchFunction launch;
  std::optional<bool> matmulHf32;
  bool repeatable = false;
};

namespace npusim::aclnn {
namespace {

// Workspace buffers start on 512-byte boundaries, as CANN aligns device memory for kernels.
constexpr uint64_t kWorkspaceAlignment = 512;

struct LiveExecutors {
  std::mutex mutex;
  std::unordered_set<aclOpExecutor*> executors;
};

LiveExecutors& live() {
  static auto* instance = new LiveExecutors();
  return *instance;
}

size_t addSlot(std::vector<TensorSlot>& slots, const aclTensor* tensor, const char* name, bool output) {
  TensorSlot slot;
  slot.handle = tensor;
  slot.output = output;
  slot.name = name;
  if (tensor != nullptr) {
    requireLive(tensor, name);
    slot.description = *tensor;
  }
  slots.push_back(std::move(slot));
  return slots.size() - 1;
}

// The executor of a phase-two call, taken out of the live set when it runs only once.
struct ClaimedExecutor {
  aclOpExecutor* executor = nullptr;
  std::unique_ptr<aclOpExecutor> owned;  // set when this run releases it
};

ClaimedExecutor claim(const char* api, aclOpExecutor* executor) {
  requireArgument(executor, "executor");
  LiveExecutors& l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.executors.count(executor) == 0) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                       "the executor is not live: an executor from aclnnXxxGetWorkspaceSize runs once, in the "
                       "aclnnXxx call that follows it, unless aclSetAclOpExecutorRepeatable made it repeatable "
                       "(call " + std::string(api) + "GetWorkspaceSize before every " + api + ")");
  }
  if (executor->api != api) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, "the executor was made by " + executor->api +
                                                    "GetWorkspaceSize, not by " + api + "GetWorkspaceSize");
  }
  ClaimedExecutor claimed;
  claimed.executor = executor;
  if (!executor->repeatable) {
    l.executors.erase(executor);
    claimed.owned.reset(executor);
  }
  return claimed;
}

struct ResolvedStream {
  int device = 0;
  runtime::StreamId stream = 0;
};

ResolvedStream resolve(aclrtStream stream) {
  int32_t device = 0;
  uint64_t id = 0;
  char detail[512] = {};
  const aclError code = npusimAclResolveStream(stream, &device, &id, detail, sizeof detail);
  if (code != ACL_SUCCESS) {
    throw AclnnFailure(ACLNN_ERR_RUNTIME_ERROR,
                       "the runtime refused the stream (error " + std::to_string(code) + "): " + detail);
  }
  return {device, static_cast<runtime::StreamId>(id)};
}

// One launch, ready to run now or to be recorded by a capturing stream (aclmdlRICaptureBegin):
// the tensors over the program's memory as they are now, the launch function and its Cube
// precision.
struct PreparedLaunch {
  std::string api;
  LaunchTensors tensors;
  LaunchFunction launch;
  std::optional<bool> matmulHf32;

  void run(int device, runtime::StreamId stream) const {
    const OperatorLaunchScope scope(device, stream, matmulHf32);
    launch(tensors);
  }
};

// A recorded launch run by aclmdlRIExecuteAsync: launched by the device, so no host dispatch
// (the backend's graph-replay pricing, as NPUGraph replays are priced).
aclError runRecordedLaunch(void* payload, int32_t device, uint64_t stream, char* detail, size_t detailSize) {
  const auto* prepared = static_cast<const PreparedLaunch*>(payload);
  const bool replaying = backend::replayingGraph();
  backend::setReplayingGraph(true);
  aclError code = ACL_SUCCESS;
  try {
    prepared->run(device, static_cast<runtime::StreamId>(stream));
  } catch (const c10::Error& error) {
    std::snprintf(detail, detailSize, "%s", error.what_without_backtrace());
    code = ACLNN_ERR_INNER;
  } catch (const std::exception& error) {
    std::snprintf(detail, detailSize, "%s", error.what());
    code = ACLNN_ERR_INNER;
  }
  backend::setReplayingGraph(replaying);
  return code;
}

void releaseRecordedLaunch(void* payload) { delete static_cast<PreparedLaunch*>(payload); }

}  // namespace

size_t OperatorPlan::input(const aclTensor* tensor, const char* name) { return addSlot(slots_, tensor, name, false); }

size_t OperatorPlan::output(const aclTensor* tensor, const char* name) { return addSlot(slots_, tensor, name, true); }

size_t OperatorPlan::workspace(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  int64_t elements = 1;
  for (int64_t s : sizes) elements *= s;
  WorkspaceBuffer buffer;
  buffer.sizes = std::move(sizes);
  buffer.dtype = dtype;
  buffer.offset = workspaceBytes_;
  const uint64_t bytes = static_cast<uint64_t>(elements) * c10::elementSize(dtype);
  workspaceBytes_ += (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  buffers_.push_back(std::move(buffer));
  return buffers_.size() - 1;
}

aclOpExecutor* makeExecutor(std::string api, OperatorPlan&& plan, uint64_t* workspaceSize) {
  if (!plan.launch_) throw AclnnFailure(ACLNN_ERR_INNER_CREATE_EXECUTOR, api + " planned no launch");
  auto executor = std::make_unique<aclOpExecutor>();
  executor->api = std::move(api);
  executor->slots = std::move(plan.slots_);
  executor->buffers = std::move(plan.buffers_);
  executor->workspaceBytes = plan.workspaceBytes_;
  executor->launch = std::move(plan.launch_);
  executor->matmulHf32 = plan.matmulHf32_;
  *workspaceSize = executor->workspaceBytes;
  LiveExecutors& l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.executors.insert(executor.get());
  return executor.release();
}

aclnnStatus prepareOperator(const char* api, uint64_t* workspaceSize, aclOpExecutor** executor,
                            const std::function<void(OperatorPlan&)>& describe) noexcept {
  const std::string phaseOne = std::string(api) + "GetWorkspaceSize";
  return callAclnn(phaseOne.c_str(), [&] {
    requireArgument(workspaceSize, "workspaceSize");
    requireArgument(executor, "executor");
    ensureBackendReady();
    OperatorPlan plan;
    describe(plan);
    *executor = makeExecutor(api, std::move(plan), workspaceSize);
  });
}

aclnnStatus runOperator(const char* api, void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                        aclrtStream stream) noexcept {
  return callAclnn(api, [&] {
    const ClaimedExecutor claimed = claim(api, executor);
    const aclOpExecutor& e = *claimed.executor;
    if (e.workspaceBytes > 0) {
      requireValid(workspaceSize >= e.workspaceBytes,
                   "workspaceSize is " + std::to_string(workspaceSize) + " bytes, but " + std::string(api) +
                       "GetWorkspaceSize asked for " + std::to_string(e.workspaceBytes));
      requireArgument(workspace, "workspace");
    }
    const ResolvedStream s = resolve(stream);
    ensureBackendReady();
    if (e.workspaceBytes > 0) requireDeviceMemory(workspace, e.workspaceBytes, s.device, "the workspace");
    std::vector<at::Tensor> tensors;
    tensors.reserve(e.slots.size());
    for (const TensorSlot& slot : e.slots) {
      tensors.push_back(slot.handle == nullptr ? at::Tensor() : deviceTensor(slot.description, s.device, slot.name));
    }
    std::vector<at::Tensor> buffers;
    for (const WorkspaceBuffer& buffer : e.buffers) {
      buffers.push_back(deviceTensorAt(static_cast<char*>(workspace) + buffer.offset, buffer.sizes, buffer.dtype,
                                       s.device));
    }
    auto prepared = std::make_unique<PreparedLaunch>(
        PreparedLaunch{api, LaunchTensors(s.device, std::move(tensors), std::move(buffers)), e.launch, e.matmulHf32});
    // A capturing stream records the launch (the executor is consumed all the same).
    int32_t captured = 0;
    const aclError code =
        npusimAclCaptureTask(stream, api, &runRecordedLaunch, &releaseRecordedLaunch, prepared.get(), &captured);
    if (code != ACL_SUCCESS) {
      throw AclnnFailure(ACLNN_ERR_RUNTIME_ERROR, "the runtime refused to record the launch (error " +
                                                      std::to_string(code) + ")");
    }
    if (captured != 0) {
      prepared.release();  // the model owns it
      return;
    }
    prepared->run(s.device, s.stream);
  });
}

void withLiveExecutor(aclOpExecutor* executor, const std::function<void(aclOpExecutor&)>& body) {
  if (executor == nullptr) throw AclnnFailure(ACLNN_ERR_INNER_NULLPTR, "executor must not be nullptr");
  LiveExecutors& l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.executors.count(executor) == 0) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                       "the executor is not live (it ran already, was destroyed, or was never made)");
  }
  body(*executor);
}

void makeRepeatable(aclOpExecutor& executor) { executor.repeatable = true; }

void destroyExecutor(aclOpExecutor* executor) {
  if (executor == nullptr) throw AclnnFailure(ACLNN_ERR_INNER_NULLPTR, "executor must not be nullptr");
  LiveExecutors& l = live();
  std::unique_ptr<aclOpExecutor> owned;
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    if (l.executors.erase(executor) == 0) {
      throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                         "the executor is not live (a non-repeatable executor is released by its aclnnXxx call)");
    }
    owned.reset(executor);
  }
}

void setTensorAddress(aclOpExecutor& executor, SlotKind kind, size_t index, aclTensor* tensor, void* address) {
  if (tensor == nullptr) throw AclnnFailure(ACLNN_ERR_INNER_NULLPTR, "tensor must not be nullptr");
  size_t seen = 0;
  for (TensorSlot& slot : executor.slots) {
    const bool counted = kind == SlotKind::kAny || (kind == SlotKind::kOutput) == slot.output;
    if (!counted) continue;
    if (seen++ != index) continue;
    requireValid(slot.handle != nullptr, "tensor " + std::to_string(index) + " (" + slot.name +
                                             ") was nullptr in " + executor.api +
                                             "GetWorkspaceSize: its address cannot be set");
    requireValid(slot.handle == tensor, "tensor " + std::to_string(index) + " of the executor is " + slot.name +
                                            ", not the aclTensor given");
    slot.description.data = address;
    if (isLive(tensor)) tensor->data = address;
    return;
  }
  throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, "index " + std::to_string(index) + " is out of range: " + executor.api +
                                                  " has " + std::to_string(seen) + " such tensors");
}

}  // namespace npusim::aclnn
