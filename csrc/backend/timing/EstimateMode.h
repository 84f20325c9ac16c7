// Estimate-only runs: npu tensors with shapes but no data.
//
// Inside npusim.estimate(), operators are priced and their outputs' shapes
// computed (PyTorch's Meta kernels on meta aliases of the npu tensors) but
// nothing is computed; device memory is allocated and accounted as usual but
// never touched, so the host commits none of it, and allocations may exceed
// the chip's capacity so that the run can report what it would need. A model
// too big for the host (a LLaMA-2-7B step) can thus be estimated on a laptop.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace npusim::backend {

bool estimateOnly() noexcept;
// Nestable; the first enter turns device-memory overcommit on, the last exit off.
void enterEstimateOnly();
void exitEstimateOnly();

// A meta storage of the npu storage's size, and a meta tensor over it with
// the npu tensor's geometry.
c10::Storage makeMetaStorageAlias(const c10::Storage& npu);
at::Tensor makeMetaAlias(const at::Tensor& npu, const c10::Storage& storageAlias);

// Fresh device memory for an output described by a meta tensor (not touched).
c10::Storage allocateNpuStorageFor(const c10::Storage& meta, int device);

// Operators whose output shape depends on the data have no Meta kernel; in
// estimate-only mode npusim assumes the largest outcome (every element
// selected, every value distinct), warns once per operator, and returns the
// outputs as meta tensors. nullopt: not such an operator.
std::optional<std::vector<c10::IValue>> dataDependentMetaOutputs(std::string_view operatorName,
                                                                  const std::vector<c10::IValue>& arguments);

// Warns once per process per `what`, e.g. for .item() in estimate-only mode.
void warnEstimateOnce(std::string_view what, std::string_view text);

}  // namespace npusim::backend
