#include "distributed/ProcessGroupHCCL.h"

#include <algorithm>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <c10/util/irange.h>

#include "backend/device/NpuErrors.h"
#include "backend/device/RecoveryChecks.h"
#include "backend/executor/KernelOperands.h"
#include "backend/timing/EstimateMode.h"
#include "distributed/DeferredRelease.h"
#include "runtime/DeviceRecovery.h"
#include "runtime/Runtime.h"

namespace npusim::distributed {
namespace {

using backend::ErrorKind;
using backend::ErrorModule;

std::string distError(ErrorKind kind) { return backend::errorSuffix(ErrorModule::kDist, kind); }

// torch_npu's check_npu_single_tensor.
void checkSingleTensor(const at::Tensor& tensor) {
  if (tensor.device().type() != c10::DeviceType::PrivateUse1 || tensor.is_sparse()) {
    TORCH_CHECK(false, "Tensors must be NPU and dense", distError(ErrorKind::kInvalidType));
  }
  if (!tensor.is_contiguous(tensor.suggest_memory_format())) {
    TORCH_CHECK(false, "Tensors must be contiguous", distError(ErrorKind::kInvalidType));
  }
}

// torch_npu's check_npu_tensors_different_devices: one NPU per process.
void checkTensorList(const std::vector<at::Tensor>& tensors) {
  if (tensors.empty()) TORCH_CHECK(false, "Tensor list must be nonempty", distError(ErrorKind::kInvalidParameter));
  if (tensors.size() != 1) {
    TORCH_CHECK(false, "Tensor list mustn't be larger than the number of available NPUs",
                distError(ErrorKind::kInvalidParameter));
  }
  checkSingleTensor(tensors.front());
}

const char* hcclTypeName(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Byte: case c10::ScalarType::Bool: return "at::kByte/at::kBool";
    case c10::ScalarType::Char: return "at::kChar";
    case c10::ScalarType::Short: return "at::kShort";
    case c10::ScalarType::Int: return "at::kInt";
    case c10::ScalarType::Long: return "at::kLong";
    case c10::ScalarType::Half: return "at::kHalf";
    case c10::ScalarType::Float: return "at::kFloat";
    case c10::ScalarType::Double: return "at::kDouble";
    case c10::ScalarType::BFloat16: return "at::kBFloat16";
    case c10::ScalarType::UInt16: return "at::ScalarType::UInt16";
    case c10::ScalarType::UInt32: return "at::ScalarType::UInt32";
    case c10::ScalarType::UInt64: return "at::ScalarType::UInt64";
    default: return nullptr;
  }
}

// HCCL's data types (torch_npu's kScalarTypeToHcclDataType); reductions take
// a subset (checkSupportedDataType).
void checkDataType(const at::Tensor& tensor, const char* function, bool reduction) {
  const char* name = hcclTypeName(tensor.scalar_type());
  if (name == nullptr) {
    TORCH_CHECK(false, "Unsupported data type for HCCL process group", distError(ErrorKind::kFeatureNotSupported));
  }
  if (!reduction) return;
  switch (tensor.scalar_type()) {
    case c10::ScalarType::Char: case c10::ScalarType::Short: case c10::ScalarType::Int: case c10::ScalarType::Long:
    case c10::ScalarType::Half: case c10::ScalarType::Float: case c10::ScalarType::BFloat16:
      return;
    default:
      TORCH_CHECK(false, "HCCL ", function, ": Unsupported data type ", name,
                  distError(ErrorKind::kFeatureNotSupported));
  }
}

// The ReduceOp Gloo runs, and whether the result is divided afterwards
// (torch_npu: "HCCL does not support ReduceOp::AVG yet", it sums then divides).
struct MappedReduce {
  c10d::ReduceOp op;
  bool average = false;
};

MappedReduce mapReduceOp(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: case c10d::ReduceOp::MIN: case c10d::ReduceOp::MAX: case c10d::ReduceOp::PRODUCT:
      return {op, false};
    case c10d::ReduceOp::AVG: return {c10d::ReduceOp(c10d::ReduceOp::SUM), true};
    case c10d::ReduceOp::BAND: TORCH_CHECK(false, "Cannot use ReduceOp.BAND with HCCL", distError(ErrorKind::kFeatureNotSupported));
    case c10d::ReduceOp::BOR: TORCH_CHECK(false, "Cannot use ReduceOp.BOR with HCCL", distError(ErrorKind::kFeatureNotSupported));
    case c10d::ReduceOp::BXOR: TORCH_CHECK(false, "Cannot use ReduceOp.BXOR with HCCL", distError(ErrorKind::kFeatureNotSupported));
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK(false, "Cannot use ReduceOp.PREMUL_SUM with HCCL", distError(ErrorKind::kFeatureNotSupported));
    default: TORCH_CHECK(false, "Unhandled ReduceOp", distError(ErrorKind::kResourceNotFound));
  }
}

void divideInPlace(at::Tensor& alias, int64_t size) {
  if (at::isFloatingType(alias.scalar_type())) {
    alias.div_(size);
  } else {
    alias.div_(size, "floor");
  }
}

std::function<void()> averageAfter(std::vector<at::Tensor> aliases, bool average, int64_t size) {
  if (!average) return {};
  return [aliases = std::move(aliases), size]() mutable {
    for (auto& alias : aliases) divideInPlace(alias, size);
  };
}

// The dtype the transport carries a tensor as. Gloo has no unsigned 16/32/64-bit types (nor
// int16); HCCL moves them (UINT16/32/64) in data-movement collectives and reductions refuse them
// before they get here, so the same bits travel as a Gloo type of that width (bits are copied,
// never computed on).
c10::ScalarType transportType(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::UInt16: return c10::ScalarType::Half;
    case c10::ScalarType::UInt32: return c10::ScalarType::Int;
    case c10::ScalarType::UInt64: return c10::ScalarType::Long;
    default: return type;
  }
}

// The host alias of an npu tensor that the transport reads or writes.
at::Tensor transportAlias(const at::Tensor& tensor) {
  at::Tensor alias = backend::kernelOperand(tensor);
  const c10::ScalarType carried = transportType(alias.scalar_type());
  return carried == alias.scalar_type() ? alias : alias.view(carried);
}

std::vector<at::Tensor> aliasesOf(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> aliases;
  aliases.reserve(tensors.size());
  for (const auto& tensor : tensors) aliases.push_back(transportAlias(tensor));
  return aliases;
}

uint64_t bytesOf(const at::Tensor& tensor) { return static_cast<uint64_t>(tensor.numel()) * tensor.element_size(); }

uint64_t bytesOf(const std::vector<at::Tensor>& tensors) {
  uint64_t total = 0;
  for (const auto& tensor : tensors) total += bytesOf(tensor);
  return total;
}

void checkSplitSizes(const std::vector<int64_t>& splits, const at::Tensor& tensor, int size) {
  if (splits.empty()) {
    TORCH_CHECK(tensor.size(0) % size == 0, "Tensor's dim 0 does not divide equally across group size",
                distError(ErrorKind::kInvalidParameter));
    return;
  }
  TORCH_CHECK(splits.size() == static_cast<size_t>(size), "Number of tensor splits not equal to group size",
              distError(ErrorKind::kInvalidType));
  int64_t sum = 0;
  for (int64_t split : splits) sum += split;
  TORCH_CHECK(sum == tensor.size(0), "Split sizes dosen't match total dim 0 size", distError(ErrorKind::kInvalidType));
}

template <typename Options>
Options withTimeout(const Options& opts, std::chrono::milliseconds execTimeout) {
  Options copy = opts;
  if (copy.timeout == c10d::kUnsetTimeout) copy.timeout = execTimeout;
  return copy;
}

}  // namespace

ProcessGroupHCCL::ProcessGroupHCCL(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, Config config)
    : c10d::Backend(rank, size), gloo_(std::move(gloo)), config_(config) {
  TORCH_CHECK(gloo_, "ProcessGroupHCCL needs a Gloo backend to move data", distError(ErrorKind::kInvalidPointer));
}

ProcessGroupHCCL::~ProcessGroupHCCL() = default;

void ProcessGroupHCCL::setTimeout(std::chrono::milliseconds timeout) { config_.execTimeout = timeout; }

void ProcessGroupHCCL::checkUsable() const {
  TORCH_CHECK(!aborted_, "The HCCL communicator of this process group was aborted or shut down",
              distError(ErrorKind::kResourceUnavailable));
}

CommunicationPlacement ProcessGroupHCCL::placementFor(int device) {
  // A device that torch_npu.npu.stop_device stopped takes no task, collectives included.
  if (runtime::DeviceRecovery::active()) backend::checkDeviceNotStopped(device);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!placement_ || placement_->device != device) {
    CommunicationPlacement placement;
    placement.device = device;
    NPUSIM_TRANSLATE_ERRORS(placement.hcclStream =
                                runtime::Runtime::instance().timeline(device).streamFromPool(/*highPriority=*/true));
    placement.topology.server = config_.server910A ? perf::ServerKind::k910A : perf::ServerKind::k910B;
    placement.topology.worldSize = size_;
    placement.topology.ranksPerServer = std::max(1, config_.ranksPerServer);
    placement.topology.bufferBytes = config_.bufferBytes;
    placement_ = placement;
  }
  return *placement_;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::finish(c10d::OpType type, int device, const runtime::Event& done,
                                                        std::vector<c10::intrusive_ptr<c10d::Work>> inner,
                                                        std::vector<at::Tensor> outputs, std::function<void()> post) {
  // What earlier completions left on Gloo threads is released here, on the caller's thread.
  releaseDeferred();
  WorkHCCL::Description description;
  description.rank = rank_;
  description.device = device;
  description.hcclStream = placementFor(device).hcclStream;
  description.opType = type;
  description.timeout = config_.execTimeout;
  description.blockingWait = config_.blockingWait;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    description.sequence = ++sequence_;
  }
  auto work = c10::make_intrusive<WorkHCCL>(description, done, std::move(inner), std::move(outputs), std::move(post));
  // Collectives move their data before returning (npusim runs device work at
  // issue; the timeline keeps it asynchronous). Point-to-point stays
  // asynchronous: a send may wait for its matching receive (batch_isend_irecv).
  const bool pointToPoint =
      type == c10d::OpType::SEND || type == c10d::OpType::RECV || type == c10d::OpType::RECVANYSOURCE;
  if (!pointToPoint && type != c10d::OpType::COALESCED) work->waitForData();
  std::lock_guard<std::mutex> lock(mutex_);
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void ProcessGroupHCCL::startCoalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_, "Coalescing is already in progress on this HCCL process group",
              distError(ErrorKind::kInvalidParameter));
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::endCoalescing() {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  int device = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(coalescing_, "endCoalescing() without startCoalescing()", distError(ErrorKind::kInvalidParameter));
    coalescing_ = false;
    works.swap(coalesced_);
    if (placement_) device = placement_->device;
  }
  runtime::Event last;
  std::vector<at::Tensor> outputs;
  for (const auto& work : works) {
    auto* hccl = static_cast<WorkHCCL*>(work.get());
    if (!last.recorded || hccl->doneEvent().time >= last.time) last = hccl->doneEvent();
    for (auto& tensor : work->result()) outputs.push_back(tensor);
  }
  return finish(c10d::OpType::COALESCED, device, last, std::move(works), std::move(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  checkUsable();
  checkTensorList(tensors);
  checkDataType(tensors[0], "broadcast", false);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kBroadcast, bytesOf(tensors));
  auto inner = gloo_->broadcast(aliases, withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::BROADCAST, device, done, {inner}, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  checkUsable();
  checkTensorList(tensors);
  checkDataType(tensors[0], "allreduce", true);
  const MappedReduce mapped = mapReduceOp(opts.reduceOp);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllReduce, bytesOf(tensors));
  auto glooOpts = withTimeout(opts, config_.execTimeout);
  glooOpts.reduceOp = mapped.op;
  auto inner = gloo_->allreduce(aliases, glooOpts);
  return finish(c10d::OpType::ALLREDUCE, device, done, {inner}, tensors, averageAfter(aliases, mapped.average, size_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  checkUsable();
  TORCH_CHECK(!tensors.empty(), "Tensor list must be nonempty", distError(ErrorKind::kInvalidParameter));
  for (const auto& tensor : tensors) {
    checkSingleTensor(tensor);
    checkDataType(tensor, "allreduce_coalesced", true);
  }
  const MappedReduce mapped = mapReduceOp(opts.reduceOp);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllReduce, bytesOf(tensors));
  auto glooOpts = withTimeout(opts, config_.execTimeout);
  glooOpts.reduceOp = mapped.op;
  auto inner = gloo_->allreduce_coalesced(aliases, glooOpts);
  return finish(c10d::OpType::ALLREDUCE_COALESCED, device, done, {inner}, tensors,
                averageAfter(aliases, mapped.average, size_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  checkUsable();
  checkTensorList(tensors);
  checkDataType(tensors[0], "reduce", true);
  const MappedReduce mapped = mapReduceOp(opts.reduceOp);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kReduce, bytesOf(tensors));
  auto glooOpts = withTimeout(opts, config_.execTimeout);
  glooOpts.reduceOp = mapped.op;
  auto inner = gloo_->reduce(aliases, glooOpts);
  const bool average = mapped.average && rank_ == static_cast<int>(opts.rootRank);
  return finish(c10d::OpType::REDUCE, device, done, {inner}, tensors, averageAfter(aliases, average, size_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  checkUsable();
  checkTensorList(inputs);
  checkDataType(inputs[0], "allgather", false);
  TORCH_CHECK(outputs.size() == 1, "allgather expects one output list per input tensor",
              distError(ErrorKind::kInvalidParameter));
  auto& list = outputs[0];
  TORCH_CHECK(list.size() == static_cast<size_t>(size_),
              "Tensor list input to scatter/gather must match number of collective participants",
              distError(ErrorKind::kInvalidParameter));
  bool even = true;
  for (const auto& out : list) {
    checkSingleTensor(out);
    TORCH_CHECK(out.scalar_type() == inputs[0].scalar_type(), "Tensors must have identical type",
                distError(ErrorKind::kInvalidType));
    even = even && out.numel() == inputs[0].numel();
  }
  TORCH_CHECK(list[rank_].numel() == inputs[0].numel(), "allgather: the output tensor of rank ", rank_, " has ",
              list[rank_].numel(), " elements but the input has ", inputs[0].numel(),
              distError(ErrorKind::kInvalidParameter));
  const int device = inputs[0].get_device();
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllGather, bytesOf(list));
  const auto glooOpts = withTimeout(opts, config_.execTimeout);
  if (even) {
    std::vector<std::vector<at::Tensor>> outputAliases{aliasesOf(list)};
    auto inputAliases = aliasesOf(inputs);
    auto inner = gloo_->allgather(outputAliases, inputAliases, glooOpts);
    return finish(c10d::OpType::ALLGATHER, device, done, {inner}, list);
  }
  // Uneven sizes (torch_npu's all-gather-v): Gloo needs equal blocks, so each
  // rank contributes its data padded to the largest block and the blocks are
  // unpacked into the outputs afterwards.
  int64_t block = 0;
  for (const auto& out : list) block = std::max(block, out.numel());
  // Estimate-only runs move no data: the staging buffers are meta tensors.
  const auto cpuOptions = at::TensorOptions().dtype(transportType(inputs[0].scalar_type()))
                              .device(backend::estimateOnly() ? c10::kMeta : c10::kCPU);
  at::Tensor padded = at::zeros({block}, cpuOptions);
  padded.narrow(0, 0, inputs[0].numel()).copy_(transportAlias(inputs[0]).reshape({-1}));
  at::Tensor gathered = at::empty({block * size_}, cpuOptions);
  auto inner = gloo_->_allgather_base(gathered, padded, glooOpts);
  auto unpack = [gathered, padded, outs = aliasesOf(list), block]() mutable {
    for (const auto i : c10::irange(outs.size())) {
      outs[i].reshape({-1}).copy_(gathered.narrow(0, static_cast<int64_t>(i) * block, outs[i].numel()));
    }
  };
  return finish(c10d::OpType::ALLGATHER, device, done, {inner}, list, std::move(unpack));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& opts) {
  checkUsable();
  checkSingleTensor(input);
  checkSingleTensor(output);
  checkDataType(input, "_allgather_base", false);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "output tensor must have the same type as input tensor",
              distError(ErrorKind::kInvalidType));
  TORCH_CHECK(input.numel() * size_ == output.numel(),
              "output tensor size must be equal to world_size times input tensor size",
              distError(ErrorKind::kInvalidParameter));
  const int device = input.get_device();
  at::Tensor outputAlias = transportAlias(output);
  at::Tensor inputAlias = transportAlias(input);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllGather, bytesOf(output));
  auto inner = gloo_->_allgather_base(outputAlias, inputAlias, withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::_ALLGATHER_BASE, device, done, {inner}, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  checkUsable();
  TORCH_CHECK(!inputs.empty() && inputs.size() == outputs.size(),
              "allgather_into_tensor_coalesced needs as many outputs as inputs", distError(ErrorKind::kInvalidParameter));
  for (const auto i : c10::irange(inputs.size())) {
    checkSingleTensor(inputs[i]);
    checkSingleTensor(outputs[i]);
    checkDataType(inputs[i], "allgather_into_tensor_coalesced", false);
    TORCH_CHECK(inputs[i].numel() * size_ == outputs[i].numel(),
                "output tensor size must be equal to world_size times input tensor size",
                distError(ErrorKind::kInvalidParameter));
  }
  const int device = inputs[0].get_device();
  auto outputAliases = aliasesOf(outputs);
  auto inputAliases = aliasesOf(inputs);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllGather, bytesOf(outputs));
  auto inner = gloo_->allgather_into_tensor_coalesced(outputAliases, inputAliases, withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::COALESCED, device, done, {inner}, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  checkUsable();
  checkTensorList(inputs);
  checkDataType(inputs[0], "gather", false);
  std::vector<std::vector<at::Tensor>> outputAliases;
  std::vector<at::Tensor> results;
  for (const auto& list : outputs) {
    for (const auto& out : list) {
      checkSingleTensor(out);
      results.push_back(out);
    }
    outputAliases.push_back(aliasesOf(list));
  }
  const int device = inputs[0].get_device();
  auto inputAliases = aliasesOf(inputs);
  // Priced as what torch_npu runs: an all-gather of every rank's input.
  const runtime::Event done =
      chargeCollective(placementFor(device), perf::Collective::kAllGather, bytesOf(inputs) * size_);
  auto inner = gloo_->gather(outputAliases, inputAliases, withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::GATHER, device, done, {inner}, results);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  checkUsable();
  checkTensorList(outputs);
  checkDataType(outputs[0], "scatter", false);
  std::vector<std::vector<at::Tensor>> inputAliases;
  for (const auto& list : inputs) {
    for (const auto& in : list) checkSingleTensor(in);
    inputAliases.push_back(aliasesOf(list));
  }
  const int device = outputs[0].get_device();
  auto outputAliases = aliasesOf(outputs);
  // Priced as what torch_npu runs: a broadcast of every rank's share.
  const runtime::Event done =
      chargeCollective(placementFor(device), perf::Collective::kBroadcast, bytesOf(outputs) * size_);
  auto inner = gloo_->scatter(outputAliases, inputAliases, withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::SCATTER, device, done, {inner}, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  checkUsable();
  checkTensorList(outputs);
  checkDataType(outputs[0], "reduce_scatter", true);
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
              "Tensor list input to scatter/gather must match number of collective participants",
              distError(ErrorKind::kInvalidParameter));
  for (const auto& in : inputs[0]) {
    checkSingleTensor(in);
    TORCH_CHECK(in.numel() == outputs[0].numel(), "All tensor operands to scatter/gather must have the same size",
                distError(ErrorKind::kInvalidParameter));
  }
  const MappedReduce mapped = mapReduceOp(opts.reduceOp);
  const int device = outputs[0].get_device();
  auto outputAliases = aliasesOf(outputs);
  std::vector<std::vector<at::Tensor>> inputAliases{aliasesOf(inputs[0])};
  const runtime::Event done =
      chargeCollective(placementFor(device), perf::Collective::kReduceScatter, bytesOf(inputs[0]));
  auto glooOpts = withTimeout(opts, config_.execTimeout);
  glooOpts.reduceOp = mapped.op;
  auto inner = gloo_->reduce_scatter(outputAliases, inputAliases, glooOpts);
  return finish(c10d::OpType::REDUCE_SCATTER, device, done, {inner}, outputs,
                averageAfter(outputAliases, mapped.average, size_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  checkUsable();
  checkSingleTensor(input);
  checkSingleTensor(output);
  checkDataType(input, "_reduce_scatter_base", true);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "input tensor must be the same type as the output tensor",
              distError(ErrorKind::kInvalidType));
  TORCH_CHECK(input.numel() == output.numel() * size_,
              "input tensor must be the same size as output size times world size",
              distError(ErrorKind::kInvalidParameter));
  const MappedReduce mapped = mapReduceOp(opts.reduceOp);
  const int device = input.get_device();
  at::Tensor outputAlias = transportAlias(output);
  at::Tensor inputAlias = transportAlias(input);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kReduceScatter, bytesOf(input));
  auto glooOpts = withTimeout(opts, config_.execTimeout);
  glooOpts.reduceOp = mapped.op;
  auto inner = gloo_->_reduce_scatter_base(outputAlias, inputAlias, glooOpts);
  return finish(c10d::OpType::_REDUCE_SCATTER_BASE, device, done, {inner}, {output},
                averageAfter({outputAlias}, mapped.average, size_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  checkUsable();
  TORCH_CHECK(!inputs.empty() && inputs.size() == outputs.size(),
              "reduce_scatter_tensor_coalesced needs as many outputs as inputs", distError(ErrorKind::kInvalidParameter));
  for (const auto i : c10::irange(inputs.size())) {
    checkSingleTensor(inputs[i]);
    checkSingleTensor(outputs[i]);
    checkDataType(inputs[i], "reduce_scatter_tensor_coalesced", true);
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * size_,
                "input tensor must be the same size as output size times world size",
                distError(ErrorKind::kInvalidParameter));
  }
  const MappedReduce mapped = mapReduceOp(opts.reduceOp);
  const int device = inputs[0].get_device();
  auto outputAliases = aliasesOf(outputs);
  auto inputAliases = aliasesOf(inputs);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kReduceScatter, bytesOf(inputs));
  auto glooOpts = withTimeout(opts, config_.execTimeout);
  glooOpts.reduceOp = mapped.op;
  auto inner = gloo_->reduce_scatter_tensor_coalesced(outputAliases, inputAliases, glooOpts);
  return finish(c10d::OpType::COALESCED, device, done, {inner}, outputs,
                averageAfter(outputAliases, mapped.average, size_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& outputSplitSizes,
                                                               std::vector<int64_t>& inputSplitSizes,
                                                               const c10d::AllToAllOptions& opts) {
  checkUsable();
  checkSingleTensor(input);
  checkSingleTensor(output);
  checkDataType(input, "alltoall_base", false);
  checkSplitSizes(inputSplitSizes, input, size_);
  checkSplitSizes(outputSplitSizes, output, size_);
  const int device = input.get_device();
  at::Tensor outputAlias = transportAlias(output);
  at::Tensor inputAlias = transportAlias(input);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllToAll, bytesOf(input));
  auto inner = gloo_->alltoall_base(outputAlias, inputAlias, outputSplitSizes, inputSplitSizes,
                                    withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::ALLTOALL_BASE, device, done, {inner}, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  checkUsable();
  TORCH_CHECK(inputs.size() == static_cast<size_t>(size_) && outputs.size() == static_cast<size_t>(size_),
              "Tensor list input to alltoall must match number of collective participants",
              distError(ErrorKind::kInvalidParameter));
  for (const auto i : c10::irange(inputs.size())) {
    checkSingleTensor(inputs[i]);
    checkSingleTensor(outputs[i]);
    checkDataType(inputs[i], "alltoall", false);
  }
  const int device = inputs[0].get_device();
  auto outputAliases = aliasesOf(outputs);
  auto inputAliases = aliasesOf(inputs);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kAllToAll, bytesOf(inputs));
  auto inner = gloo_->alltoall(outputAliases, inputAliases, withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::ALLTOALL, device, done, {inner}, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  checkUsable();
  checkTensorList(tensors);
  checkDataType(tensors[0], "send", false);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const int perServer = std::max(1, config_.ranksPerServer);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kSendRecv, bytesOf(tensors),
                                               dstRank / perServer == rank_ / perServer);
  auto inner = gloo_->send(aliases, dstRank, tag);
  return finish(c10d::OpType::SEND, device, done, {inner}, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  checkUsable();
  checkTensorList(tensors);
  checkDataType(tensors[0], "recv", false);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const int perServer = std::max(1, config_.ranksPerServer);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kSendRecv, bytesOf(tensors),
                                               srcRank / perServer == rank_ / perServer);
  auto inner = gloo_->recv(aliases, srcRank, tag);
  return finish(c10d::OpType::RECV, device, done, {inner}, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  checkUsable();
  checkTensorList(tensors);
  checkDataType(tensors[0], "recvAnysource", false);
  const int device = tensors[0].get_device();
  auto aliases = aliasesOf(tensors);
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kSendRecv, bytesOf(tensors));
  auto inner = gloo_->recvAnysource(aliases, tag);
  return finish(c10d::OpType::RECVANYSOURCE, device, done, {inner}, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::barrier(const c10d::BarrierOptions& opts) {
  checkUsable();
  int device = 0;
  if (!opts.device_ids.empty()) {
    device = static_cast<int>(opts.device_ids.front());
  } else if (opts.device.has_value() && opts.device->type() == c10::DeviceType::PrivateUse1 &&
             opts.device->has_index()) {
    device = opts.device->index();
  } else {
    device = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->getDevice().index();
  }
  const runtime::Event done = chargeCollective(placementFor(device), perf::Collective::kBarrier, 0);
  auto inner = gloo_->barrier(withTimeout(opts, config_.execTimeout));
  return finish(c10d::OpType::BARRIER, device, done, {inner}, {});
}

void ProcessGroupHCCL::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
  }
  gloo_->abort();
}

void ProcessGroupHCCL::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
  }
  gloo_->shutdown();
}

}  // namespace npusim::distributed
