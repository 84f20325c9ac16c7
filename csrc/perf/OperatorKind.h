// What kind of work an aten operator is, for pricing. Classification is done
// once per operator name (string work allowed); the kind is then passed to
// CostModel::price on every call.
//
// The kind also fixes how price() reads the operand list (the aten argument
// order); see CostModel.h for each kind's operands.
#pragma once

#include <string_view>

namespace npusim::perf {

enum class OperatorKind {
  kMatmul,               // mm, matmul, mv, dot, vdot, inner: (A, B)
  kBatchedMatmul,        // bmm: (A[b,M,K], B[b,K,N])
  kAddMatmul,            // addmm, addmv, baddbmm, addbmm: (C, A, B)
  kLinear,               // linear: (x[...,K], W[N,K], bias?)
  kConvolution,          // convolution(_overrideable), _convolution, convNd: (input, weight, bias?)
  kConvolutionBackward,  // convolution_backward(_overrideable): (grad_out, input, weight) -> (gI, gW, gB)
  kAttention,            // fused attention (SDPA flash/efficient, npu_fusion_attention): (q, k, v, ...)
  kAttentionBackward,    // its backward: (grad_out, q, k, v, out, ...) -> (gq, gk, gv)
  kElementwise,          // arithmetic, comparisons, casts-in-place, where, clamp, relu and their backward
  kActivation,           // transcendental element-wise: exp, log, tanh, sigmoid, gelu, silu, swiglu, rope, pow...
  kReduction,            // sum, mean, max, var, norm, argmax, nll_loss, cumsum...
  kNormalization,        // batch/layer/group/rms norm and their backward (two passes over the input)
  kSoftmax,              // softmax, log_softmax and their backward
  kPooling,              // max/avg/adaptive pooling and their backward
  kDataMovement,         // copies, casts, contiguous, cat, stack, pad, flip, repeat, transposing copies
  kIndexing,             // index, index_put, gather, scatter, embedding, masked ops, nonzero
  kSort,                 // sort, topk, argsort, unique, median
  kRandom,               // uniform_, normal_, bernoulli_, dropout, randperm, multinomial
  kView,                 // no kernel: views (view, transpose, slice, expand...) and metadata (empty, resize_)
  kFactory,              // kernels that only write: fill_, zero_, zeros, ones, full, arange
  kOptimizerFused,       // multi-tensor optimizer kernels: _fused_adam(w)_, _foreach_*, npu_apply_adam
  kOther,                // unknown: priced as an element-wise kernel over its operands
};

// Classifies an operator name such as "aten::mm", "aten::add.Tensor",
// "aten::add_", "npu::npu_fusion_attention" or a bare "softmax". The namespace
// prefix, the overload name and the in-place underscore are ignored.
OperatorKind classifyOperator(std::string_view atenName);

std::string_view operatorKindName(OperatorKind kind) noexcept;

// Matrix kinds that run on the Cube unit.
constexpr bool isCubeKind(OperatorKind kind) noexcept {
  return kind == OperatorKind::kMatmul || kind == OperatorKind::kBatchedMatmul || kind == OperatorKind::kAddMatmul ||
         kind == OperatorKind::kLinear || kind == OperatorKind::kConvolution ||
         kind == OperatorKind::kConvolutionBackward || kind == OperatorKind::kAttention ||
         kind == OperatorKind::kAttentionBackward;
}

}  // namespace npusim::perf
