// Sparse and other non-strided layouts on npu (see SparseTensors.cpp).
#pragma once

#include <cstddef>

#include <ATen/core/Tensor.h>

namespace npusim::backend {

// Registers the sparse executor for every aten operator with a SparseCPU
// kernel and no SparsePrivateUse1 one; once, at extension load (all
// operators are registered by then). Returns how many.
size_t routeSparseKernelsThroughExecutor();

// Raises torch_npu's "not currently supported on the NPU backend" error when
// a dense operator's CPU kernel returned a tensor of another layout (sparse,
// mkldnn): the dense executor hands out strided npu tensors only.
void checkStridedResult(const char* operatorName, const at::Tensor& result);

}  // namespace npusim::backend
