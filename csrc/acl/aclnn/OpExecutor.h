// The two phases of every aclnn operator and the executor between them (CANN's aclOpExecutor).
//
// Phase one, aclnnXxxGetWorkspaceSize, runs prepareOperator: the operator's describe function
// checks the arguments (the documented status codes), records the tensors it will read and
// write (a copy of each aclTensor's description, in argument order), the intermediate tensors
// its implementation needs in the workspace, and the function that launches it. The executor
// and the workspace size go back to the caller.
//
// Phase two, aclnnXxx, runs runOperator: it checks the executor (live, made for this operator),
// the workspace (large enough, device memory) and the stream, makes npu tensors over the
// recorded device memory (no copy) and calls the launch function with the stream as PyTorch's
// current stream. The launch runs the operator as the PyTorch path runs it: the same CPU kernel
// on the device memory, priced by the same cost-model call on that stream's timeline.
//
// An executor runs once and is released by its aclnnXxx call, unless the program made it
// repeatable (aclSetAclOpExecutorRepeatable); then it runs on every call until
// aclDestroyAclOpExecutor, and its tensors' addresses can be changed between runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "acl/aclnn/AclnnObjects.h"

namespace npusim::aclnn {

struct TensorSlot {
  const aclTensor* handle = nullptr;  // the caller's aclTensor; null for an absent optional tensor
  aclTensor description;              // as it was described at phase one; addresses may change
  bool output = false;
  std::string name;
};

// An intermediate tensor in the workspace.
struct WorkspaceBuffer {
  std::vector<int64_t> sizes;
  c10::ScalarType dtype = c10::ScalarType::Float;
  uint64_t offset = 0;
};

// What a launch function works on: npu tensors over the program's device memory.
class LaunchTensors {
 public:
  LaunchTensors(int device, std::vector<at::Tensor> slots, std::vector<at::Tensor> workspace)
      : device_(device), slots_(std::move(slots)), workspace_(std::move(workspace)) {}
  // The tensor of argument slot `slot` (undefined for an absent optional tensor).
  const at::Tensor& operator[](size_t slot) const { return slots_.at(slot); }
  const at::Tensor& workspace(size_t buffer) const { return workspace_.at(buffer); }
  int device() const { return device_; }

 private:
  int device_;
  std::vector<at::Tensor> slots_;
  std::vector<at::Tensor> workspace_;
};

using LaunchFunction = std::function<void(const LaunchTensors&)>;

// What phase one records.
class OperatorPlan {
 public:
  // The tensor arguments, in the order of the GetWorkspaceSize signature; each returns its
  // slot. A null optional tensor still takes a slot (as CANN numbers them for
  // aclSetTensorAddr).
  size_t input(const aclTensor* tensor, const char* name);
  size_t output(const aclTensor* tensor, const char* name);
  // An intermediate tensor of the implementation, placed in the workspace.
  size_t workspace(std::vector<int64_t> sizes, c10::ScalarType dtype);
  void launch(LaunchFunction function) { launch_ = std::move(function); }
  // The Cube's precision for fp32 matmuls of this call (cubeMathType): HF32 or not. Unset:
  // no matmul, or the process switch applies.
  void matmulHf32(bool enabled) { matmulHf32_ = enabled; }

 private:
  friend aclOpExecutor* makeExecutor(std::string api, OperatorPlan&& plan, uint64_t* workspaceSize);
  std::vector<TensorSlot> slots_;
  std::vector<WorkspaceBuffer> buffers_;
  uint64_t workspaceBytes_ = 0;
  LaunchFunction launch_;
  std::optional<bool> matmulHf32_;
};

// Phase one of `api` ("aclnnAdd"): logs failures as "aclnnAddGetWorkspaceSize".
aclnnStatus prepareOperator(const char* api, uint64_t* workspaceSize, aclOpExecutor** executor,
                            const std::function<void(OperatorPlan&)>& describe) noexcept;

// Phase two of `api`.
aclnnStatus runOperator(const char* api, void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                        aclrtStream stream) noexcept;

// For the executor calls (aclSetAclOpExecutorRepeatable, aclSetTensorAddr ...): the live
// executor `executor` (ACLNN_ERR_INNER_NULLPTR for null, ACLNN_ERR_PARAM_INVALID when not live),
// used under the executors' lock.
void withLiveExecutor(aclOpExecutor* executor, const std::function<void(aclOpExecutor&)>& body);
void makeRepeatable(aclOpExecutor& executor);
// Destroys a live executor; throws ACLNN_ERR_PARAM_INVALID if it is not live.
void destroyExecutor(aclOpExecutor* executor);

enum class SlotKind { kAny, kInput, kOutput };
// Points the `index`-th tensor slot of `kind` at `address` (and the caller's aclTensor too).
void setTensorAddress(aclOpExecutor& executor, SlotKind kind, size_t index, aclTensor* tensor, void* address);

}  // namespace npusim::aclnn
