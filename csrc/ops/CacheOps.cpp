// npu_scatter_nd_update_ (reference §5.7): TensorFlow's ScatterNdUpdate in
// place, as vllm-ascend uses it to write new entries into a KV cache: each
// row of `indices` ([..., K]) addresses a slice of the first K dimensions of
// `self`, which the matching slice of `updates` replaces.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;

void scatterNdUpdateHost(const Tensor& self, const Tensor& indices, const Tensor& updates) {
  NPU_OPS_CHECK(indices.scalar_type() == at::kInt || indices.scalar_type() == at::kLong,
                "npu_scatter_nd_update_: indices must be int32 or int64, but got ", indices.scalar_type());
  NPU_OPS_CHECK(indices.dim() >= 1, "npu_scatter_nd_update_: indices must have at least one dimension");
  const int64_t depth = indices.size(-1);
  NPU_OPS_CHECK(depth >= 1 && depth <= self.dim(), "npu_scatter_nd_update_: the last dimension of indices (", depth,
                ") must be in [1, ", self.dim(), "]");
  std::vector<int64_t> expected(indices.sizes().begin(), indices.sizes().end() - 1);
  expected.insert(expected.end(), self.sizes().begin() + depth, self.sizes().end());
  NPU_OPS_CHECK(updates.sizes().equals(expected), "npu_scatter_nd_update_: updates must have shape ", expected,
                ", but got ", updates.sizes());
  NPU_OPS_CHECK(updates.scalar_type() == self.scalar_type(), "npu_scatter_nd_update_: updates must have the dtype of "
                "self (", self.scalar_type(), "), but got ", updates.scalar_type());
  if (self.is_meta()) return;
  // Row-major offsets into the first `depth` dimensions.
  const Tensor index = indices.reshape({-1, depth}).to(at::kLong);
  Tensor linear = at::zeros({index.size(0)}, index.options());
  for (int64_t d = 0; d < depth; ++d) {
    const Tensor column = index.select(1, d);
    NPU_OPS_CHECK(column.numel() == 0 || (column.min().item<int64_t>() >= 0 &&
                                          column.max().item<int64_t>() < self.size(d)),
                  "npu_scatter_nd_update_: indices out of range for dimension ", d, " of size ", self.size(d));
    linear = linear * self.size(d) + column;
  }
  int64_t leading = 1;
  for (int64_t d = 0; d < depth; ++d) leading *= self.size(d);
  const Tensor rows = self.view({leading, -1});
  rows.index_copy_(0, linear, updates.reshape({linear.size(0), -1}));
}

Tensor& scatterNdUpdateNpu(Tensor& self, const Tensor& indices, const Tensor& updates) {
  requireNpuTensors({&self, &indices, &updates});
  NPU_OPS_CHECK(self.is_contiguous(), "npu_scatter_nd_update_: self must be contiguous");
  const int device = self.device().index();
  scatterNdUpdateHost(hostOperand(self), hostOperand(indices), hostOperand(updates));
  perf::FusedKernelWork work =
      streamingWork({&indices, &updates}, {&updates}, double(updates.numel()), perf::calibration::kOpsIndexing);
  chargeFusedKernel(device, "npu::npu_scatter_nd_update_", perf::OperatorKind::kIndexing, work);
  return self;
}

Tensor& scatterNdUpdateMeta(Tensor& self, const Tensor& indices, const Tensor& updates) {
  scatterNdUpdateHost(self, indices, updates);
  return self;
}

Tensor& scatterNdUpdateInplaceOrView(Tensor& self, const Tensor& indices, const Tensor& updates) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("npu::npu_scatter_nd_update_", "")
                       .typed<Tensor&(Tensor&, const Tensor&, const Tensor&)>();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(self, indices, updates);
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) { m.impl("npu_scatter_nd_update_", TORCH_FN(scatterNdUpdateNpu)); }
TORCH_LIBRARY_IMPL(npu, Meta, m) { m.impl("npu_scatter_nd_update_", TORCH_FN(scatterNdUpdateMeta)); }
TORCH_LIBRARY_IMPL(npu, ADInplaceOrView, m) {
  m.impl("npu_scatter_nd_update_", TORCH_FN(scatterNdUpdateInplaceOrView));
}

}  // namespace npusim::ops
