// Tensor.contiguous(memory_format) on npu, as torch_npu's
// NPUNativeFunctions::contiguous: a tensor already in the requested format is
// returned as is, otherwise only the plain contiguous format can be produced
// (channels_last and the other formats are refused).
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "backend/device/NpuErrors.h"

namespace npusim::backend {
namespace {

at::Tensor npuContiguous(const at::Tensor& self, c10::MemoryFormat memoryFormat) {
  if (self.is_contiguous(memoryFormat)) return self;
  TORCH_CHECK(memoryFormat == c10::MemoryFormat::Contiguous,
              "NPU contiguous operator only supported contiguous memory format.",
              errorSuffix(ErrorModule::kOps, ErrorKind::kFeatureNotSupported));
  // clone dispatches from the top again: autograd records it.
  return self.clone(memoryFormat);
}

}  // namespace

// At the autograd key: contiguous is a composite operator, whose autograd
// entry would otherwise decompose it before any npu kernel is reached.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("contiguous", TORCH_FN(npuContiguous)); }

}  // namespace npusim::backend
