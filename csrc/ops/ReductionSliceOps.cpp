// ModelZoo-era reduction and slicing operators of torch_npu (reference §4.14):
// npu_max.dim (+ npu_max_backward), ArgMaxWithValue on the chip: the maximum along
// one dimension and its position as int32 (torch.max gives int64); npu_slice
// (+ .out), TensorFlow's Slice: the block of `size` elements starting at
// `offsets`, copied into a new contiguous tensor (no backward, as in torch_npu).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;

int64_t reducedDim(const Tensor& self, int64_t dim, const char* op) {
  const int64_t n = std::max<int64_t>(self.dim(), 1);
  NPU_OPS_CHECK_VALUE(dim >= -n && dim < n, op, ": dim ", dim, " is out of range [", -n, ", ", n - 1,
                      "] for a tensor of ", self.dim(), " dimensions");
  return dim < 0 ? dim + n : dim;
}

// ---- npu_max: values in self's dtype, indices int32 (the first maximum, as ArgMaxWithValue).
std::tuple<Tensor, Tensor> maxHost(const Tensor& self, int64_t dim, bool keepdim) {
  const int64_t d = reducedDim(self, dim, "npu_max");
  NPU_OPS_CHECK(self.dim() == 0 || self.size(d) > 0, "npu_max: cannot reduce the empty dimension ", dim);
  auto [values, indices] = at::max(self, d, keepdim);
  return {values, indices.to(at::kInt)};
}

// The gradient goes to the position of each maximum; everything else gets zero.
Tensor maxBackwardHost(const Tensor& grad, int64_t dim, const Tensor& indices, c10::SymIntArrayRef sizes,
                       bool keepdim) {
  const std::vector<int64_t> shape = C10_AS_INTARRAYREF_SLOW(sizes).vec();
  const int64_t rank = std::max<int64_t>(int64_t(shape.size()), 1);
  const int64_t d = dim < 0 ? dim + rank : dim;
  NPU_OPS_CHECK_VALUE(d >= 0 && d < rank, "npu_max_backward: dim ", dim, " is out of range for sizes ", sizes);
  Tensor g = grad;
  Tensor index = indices.to(at::kLong);
  if (!keepdim && !shape.empty()) {
    g = g.unsqueeze(d);
    index = index.unsqueeze(d);
  }
  if (shape.empty()) return g.reshape({});
  return at::zeros(shape, grad.options()).scatter(d, index, g);
}

std::tuple<Tensor, Tensor> maxNpu(const Tensor& self, int64_t dim, bool keepdim) {
  requireNpuTensors({&self});
  const int device = self.device().index();
  auto [values, indices] = maxHost(hostOperand(self), dim, keepdim);
  chargeFusedKernel(device, "npu::npu_max.dim", perf::OperatorKind::kReduction,
                    streamingWork({&self}, {&values, &indices}, double(self.numel()),
                                  perf::calibration::kOpsReduction));
  return {deviceResult(values, device), deviceResult(indices, device)};
}

Tensor maxBackwardNpu(const Tensor& grad, int64_t dim, const Tensor& indices, c10::SymIntArrayRef sizes,
                      bool keepdim) {
  requireNpuTensors({&grad, &indices});
  const int device = grad.device().index();
  const Tensor dx = maxBackwardHost(hostOperand(grad), dim, hostOperand(indices), sizes, keepdim);
  chargeFusedKernel(device, "npu::npu_max_backward", perf::OperatorKind::kIndexing,
                    streamingWork({&grad, &indices}, {&dx}, double(dx.numel()), perf::calibration::kOpsIndexing));
  return deviceResult(dx, device);
}

template <class Signature>
c10::TypedOperatorHandle<Signature> npuOp(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

class MaxFunction : public torch::autograd::Function<MaxFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& self,
                                                int64_t dim, bool keepdim) {
    static auto op = npuOp<std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool)>("npu::npu_max", "dim");
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [values, indices] = op.call(self, dim, keepdim);
    ctx->save_for_backward({indices});
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["keepdim"] = keepdim;
    ctx->saved_data["sizes"] = self.sizes().vec();
    ctx->mark_non_differentiable({indices});
    return {values, indices};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op =
        npuOp<Tensor(const Tensor&, int64_t, const Tensor&, c10::SymIntArrayRef, bool)>("npu::npu_max_backward");
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    return {op.call(grads[0], ctx->saved_data["dim"].toInt(), ctx->get_saved_variables()[0],
                    c10::fromIntArrayRefSlow(sizes), ctx->saved_data["keepdim"].toBool()),
            Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor> maxAutograd(const Tensor& self, int64_t dim, bool keepdim) {
  auto outputs = MaxFunction::apply(self, dim, keepdim);
  return {outputs[0], outputs[1]};
}

// ---- npu_slice: offsets and size name every dimension; the block must lie inside self.
void checkSlice(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size) {
  NPU_OPS_CHECK(int64_t(offsets.size()) == self.dim() && int64_t(size.size()) == self.dim(),
                "npu_slice: offsets and size must have one entry per dimension of self (", self.dim(),
                "), but got ", offsets.size(), " and ", size.size());
  for (int64_t d = 0; d < self.dim(); ++d) {
    NPU_OPS_CHECK_VALUE(offsets[d] >= 0 && size[d] >= 0 && offsets[d] + size[d] <= self.size(d),
                        "npu_slice: the slice [", offsets[d], ", ", offsets[d] + size[d], ") of dimension ", d,
                        " is outside its size ", self.size(d));
  }
}

Tensor sliceHost(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size) {
  checkSlice(self, offsets, size);
  Tensor block = self;
  for (int64_t d = 0; d < self.dim(); ++d) block = block.narrow(d, offsets[d], size[d]);
  return block.contiguous();
}

Tensor sliceNpu(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size) {
  requireNpuTensors({&self});
  const int device = self.device().index();
  const Tensor out = sliceHost(hostOperand(self), offsets, size);
  chargeFusedKernel(device, "npu::npu_slice", perf::OperatorKind::kDataMovement,
                    streamingWork({&out}, {&out}, double(out.numel()), perf::calibration::kOpsElementwise));
  return deviceResult(out, device);
}

Tensor& sliceOutNpu(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size, Tensor& out) {
  requireNpuTensors({&self, &out});
  checkSlice(self, offsets, size);
  NPU_OPS_CHECK(out.scalar_type() == self.scalar_type(), "npu_slice: out must have the dtype of self (",
                self.scalar_type(), "), but got ", out.scalar_type());
  if (!out.sizes().equals(size)) out.resize_(size);
  const int device = self.device().index();
  hostOperand(out).copy_(sliceHost(hostOperand(self), offsets, size));
  chargeFusedKernel(device, "npu::npu_slice.out", perf::OperatorKind::kDataMovement,
                    streamingWork({&out}, {&out}, double(out.numel()), perf::calibration::kOpsElementwise));
  return out;
}

Tensor sliceMeta(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size) {
  checkSlice(self, offsets, size);
  return at::empty(size, self.options());
}

Tensor& sliceOutMeta(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size, Tensor& out) {
  checkSlice(self, offsets, size);
  if (!out.sizes().equals(size)) out.resize_(size);
  return out;
}

Tensor& sliceOutInplaceOrView(const Tensor& self, at::IntArrayRef offsets, at::IntArrayRef size, Tensor& out) {
  static auto op = npuOp<Tensor&(const Tensor&, at::IntArrayRef, at::IntArrayRef, Tensor&)>("npu::npu_slice", "out");
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(self, offsets, size, out);
  }
  out.unsafeGetTensorImpl()->bump_version();
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_max.dim", TORCH_FN(maxNpu));
  m.impl("npu_max_backward", TORCH_FN(maxBackwardNpu));
  m.impl("npu_slice", TORCH_FN(sliceNpu));
  m.impl("npu_slice.out", TORCH_FN(sliceOutNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_max.dim", TORCH_FN(maxHost));
  m.impl("npu_max_backward", TORCH_FN(maxBackwardHost));
  m.impl("npu_slice", TORCH_FN(sliceMeta));
  m.impl("npu_slice.out", TORCH_FN(sliceOutMeta));
}

TORCH_LIBRARY_IMPL(npu, ADInplaceOrView, m) { m.impl("npu_slice.out", TORCH_FN(sliceOutInplaceOrView)); }

TORCH_LIBRARY_IMPL(npu, Autograd, m) { m.impl("npu_max.dim", TORCH_FN(maxAutograd)); }

}  // namespace npusim::ops
