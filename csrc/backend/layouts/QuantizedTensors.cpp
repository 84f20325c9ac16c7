// Quantized tensors on npu, as torch_npu 2.13 has them.
//
// op-plugin's 2.13 line registers quantize_per_tensor and quantize_per_channel
// (the default overloads only) for PrivateUse1 and, in its "quant" section for
// the QuantizedPrivateUse1 key, dequantize.self, int_repr and
// _empty_affine_quantized. Its kernels are PyTorch's own
// (at::native::quantize_per_tensor, ...dequantize_quantized,
// ...empty_affine_quantized) plus the affine quantize / dequantize dispatch
// stubs registered for PrivateUse1. So on the real stack
// torch.quantize_per_tensor(npu_x, ...) returns a real quantized npu tensor
// (QTensorImpl, key QuantizedPrivateUse1, memory from the npu allocator) whose
// int_repr() and dequantize() work, and every other operator on it (q_scale,
// qscheme and so printing, views, .cpu(), arithmetic) has no kernel and fails
// with PyTorch's dispatcher error naming the QuantizedPrivateUse1 backend.
// q_scale, q_zero_point, qscheme and the q_per_channel_* accessors were
// registered in op-plugin's v2.2 line only.
//
// npusim registers the same operators and stubs around the same PyTorch
// functions. The stubs run PyTorch's CPU quantize / dequantize on zero-copy
// CPU aliases of the device memory (its exported entry points, which repeat
// the argument checks on the aliases: the CPU stubs themselves are not
// callable from outside libtorch), so the values are the CPU's bit for bit;
// in estimate-only mode they compute nothing. Each operator is priced as one
// vector kernel.
#include <ATen/native/quantized/AffineQuantizer.h>
#include <ATen/ops/_empty_affine_quantized_native.h>
#include <ATen/ops/dequantize_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/int_repr_native.h>
#include <ATen/ops/quantize_per_channel_native.h>
#include <ATen/ops/quantize_per_tensor_native.h>
#include <ATen/quantized/QTensorImpl.h>
#include <ATen/quantized/Quantizer.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuTensors.h"
#include "backend/device/TensorAliasing.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

// A quantized CPU tensor over the bytes of a quantized npu tensor, for the CPU
// stubs and kernels (which read the data pointer with the quantized dtype).
at::Tensor quantizedCpuAlias(const at::Tensor& npu) {
  at::Tensor alias = at::detail::make_tensor<at::QTensorImpl>(makeCpuStorageAlias(npu.storage()),
                                                              c10::DispatchKeySet(c10::DispatchKey::QuantizedCPU),
                                                              npu.dtype(), at::get_qtensorimpl(npu)->quantizer());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(npu.sizes(), npu.strides(), npu.storage_offset());
  return alias;
}

// The per-channel parameters as the CPU stubs read them (double scales, int64
// zero points). PyTorch's quantizer converts them on their own device; on npu
// torch_npu's cast rule may have made the scales float32 there.
at::Tensor hostValues(const at::Tensor& t, c10::ScalarType type) {
  const at::Tensor host = isNpuTensor(t) ? makeCpuAlias(t) : t;
  return host.to(type).contiguous();
}

// As the CUDA stubs (a TensorIterator over the input and the parameters): the
// per-channel scales and zero points live on the tensor's device.
void checkParametersOnDevice(const at::Tensor& tensor, const at::Tensor& scales, const at::Tensor& zeroPoints) {
  for (const at::Tensor* parameter : {&scales, &zeroPoints}) {
    TORCH_CHECK(parameter->device() == tensor.device(),
                "Expected all tensors to be on the same device, but found at least two devices, ", tensor.device(),
                " and ", parameter->device(), "!");
  }
}

void quantizePerTensorStub(const at::Tensor& rtensor, at::Tensor& qtensor, double scale, int64_t zeroPoint) {
  if (estimateOnly()) return;
  at::Tensor quantized = quantizedCpuAlias(qtensor);
  at::native::quantize_tensor_per_tensor_affine(makeCpuAlias(rtensor), quantized, scale, zeroPoint);
}

void quantizePerChannelStub(const at::Tensor& rtensor, at::Tensor& qtensor, const at::Tensor& scales,
                            const at::Tensor& zeroPoints, int64_t axis) {
  checkParametersOnDevice(rtensor, scales, zeroPoints);
  if (estimateOnly()) return;
  at::Tensor quantized = quantizedCpuAlias(qtensor);
  at::native::quantize_tensor_per_channel_affine(makeCpuAlias(rtensor), quantized, hostValues(scales, at::kDouble),
                                                 hostValues(zeroPoints, at::kLong), axis);
}

void dequantizePerTensorStub(const at::Tensor& qtensor, at::Tensor& rtensor, double scale, int64_t zeroPoint) {
  if (estimateOnly()) return;
  at::Tensor real = makeCpuAlias(rtensor);
  at::native::dequantize_tensor_per_tensor_affine(quantizedCpuAlias(qtensor), real, scale, zeroPoint);
}

void dequantizePerChannelStub(const at::Tensor& qtensor, at::Tensor& rtensor, const at::Tensor& scales,
                              const at::Tensor& zeroPoints, int64_t axis) {
  checkParametersOnDevice(qtensor, scales, zeroPoints);
  if (estimateOnly()) return;
  at::Tensor real = makeCpuAlias(rtensor);
  at::native::dequantize_tensor_per_channel_affine(quantizedCpuAlias(qtensor), real, hostValues(scales, at::kDouble),
                                                   hostValues(zeroPoints, at::kLong), axis);
}

// One vector kernel over `inputs` writing `output`.
void chargeVectorKernel(OperatorRecord& record, int device, std::initializer_list<const at::Tensor*> inputs,
                        const at::Tensor& output) {
  c10::SmallVector<perf::TensorDesc, 3> operands;
  for (const at::Tensor* input : inputs) operands.push_back(describeTensor(*input));
  const perf::TensorDesc result = describeTensor(output);
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kElementwise, operands.data(),
                                         static_cast<int>(operands.size()), &result, 1, runtime::Placement::kAiCore,
                                         false));
}

at::Tensor quantizePerTensor(const at::Tensor& self, double scale, int64_t zeroPoint, at::ScalarType dtype) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor result = at::native::quantize_per_tensor(self, scale, zeroPoint, dtype);
  static OperatorRecord& record = nativeOperatorRecord("aten::quantize_per_tensor");
  chargeVectorKernel(record, npuDeviceIndex(self), {&self}, result);
  return result;
}

at::Tensor quantizePerChannel(const at::Tensor& self, const at::Tensor& scales, const at::Tensor& zeroPoints,
                              int64_t axis, at::ScalarType dtype) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor result = at::native::quantize_per_channel(self, scales, zeroPoints, axis, dtype);
  static OperatorRecord& record = nativeOperatorRecord("aten::quantize_per_channel");
  chargeVectorKernel(record, npuDeviceIndex(self), {&self, &scales, &zeroPoints}, result);
  return result;
}

at::Tensor dequantize(const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor result = at::native::dequantize_quantized(self);
  static OperatorRecord& record = nativeOperatorRecord("aten::dequantize", "self");
  chargeVectorKernel(record, npuDeviceIndex(self), {&self}, result);
  return result;
}

// op-plugin reads the bytes as the underlying integer type and casts them to
// that same type (a copy); the CPU kernel does the same copy.
at::Tensor intRepr(const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  const int device = npuDeviceIndex(self);
  at::Tensor result;
  if (estimateOnly()) {
    // The CPU kernel's shape: sub-byte types come out packed, one byte per 8 / bits elements.
    const c10::ScalarType type = self.scalar_type();
    const int64_t bits = type == c10::ScalarType::QUInt4x2 ? 4 : type == c10::ScalarType::QUInt2x4 ? 2 : 0;
    const auto options = self.options().dtype(c10::toUnderlying(type));
    result = bits == 0 ? at::empty(self.sizes(), options, self.suggest_memory_format())
                       : at::empty({(self.numel() * bits + 7) / 8}, options);
  } else {
    at::Tensor host;
    {
      const ScopedOutputDevice outputs(device);
      host = at::native::int_repr_quantized_cpu(quantizedCpuAlias(self));
    }
    result = adoptAsNpuTensor(host, device);
  }
  static OperatorRecord& record = nativeOperatorRecord("aten::int_repr");
  chargeVectorKernel(record, device, {&self}, result);
  return result;
}

// A factory: memory, no kernel.
at::Tensor emptyAffineQuantized(c10::SymIntArrayRef size, std::optional<c10::ScalarType> dtype,
                                std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                std::optional<bool> pinMemory, double scale, int64_t zeroPoint,
                                std::optional<c10::MemoryFormat> memoryFormat) {
  const c10::Device target =
      device && device->has_index()
          ? *device
          : c10::Device(c10::DeviceType::PrivateUse1,
                        static_cast<c10::DeviceIndex>(runtime::Runtime::instance().currentDevice()));
  const c10::DeviceGuard guard(target);
  return at::native::empty_affine_quantized(C10_AS_INTARRAYREF_SLOW(size), dtype, layout, target, pinMemory, scale,
                                            zeroPoint, memoryFormat);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("quantize_per_tensor", TORCH_FN(quantizePerTensor));
  m.impl("quantize_per_channel", TORCH_FN(quantizePerChannel));
}

TORCH_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m) {
  m.impl("dequantize.self", TORCH_FN(dequantize));
  m.impl("int_repr", TORCH_FN(intRepr));
  m.impl("_empty_affine_quantized", TORCH_FN(emptyAffineQuantized));
}

}  // namespace npusim::backend

// The affine quantize / dequantize stubs for PrivateUse1, which PyTorch's
// quantizers call for npu tensors (op-plugin registers the same four).
namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(quantize_tensor_per_tensor_affine_stub, &npusim::backend::quantizePerTensorStub)
REGISTER_PRIVATEUSE1_DISPATCH(quantize_tensor_per_channel_affine_stub, &npusim::backend::quantizePerChannelStub)
REGISTER_PRIVATEUSE1_DISPATCH(dequantize_tensor_per_tensor_affine_stub, &npusim::backend::dequantizePerTensorStub)
REGISTER_PRIVATEUSE1_DISPATCH(dequantize_tensor_per_channel_affine_stub,
                              &npusim::backend::dequantizePerChannelStub)
}  // namespace at::native
