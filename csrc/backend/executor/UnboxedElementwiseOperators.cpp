// The unboxed executor's operators (UnboxedExecutor.h): element-wise arithmetic, comparisons, activations and
// their backward, fills. One line per aten overload; an overload listed here that npusim implements natively,
// or that has no CPU kernel, is skipped at registration.
#include "backend/executor/UnboxedExecutor.h"

#include <ATen/ops/add_ops.h>
#include <ATen/ops/addcdiv_ops.h>
#include <ATen/ops/addcmul_ops.h>
#include <ATen/ops/bitwise_and_ops.h>
#include <ATen/ops/bitwise_not_ops.h>
#include <ATen/ops/ceil_ops.h>
#include <ATen/ops/clamp_max_ops.h>
#include <ATen/ops/clamp_min_ops.h>
#include <ATen/ops/clamp_ops.h>
#include <ATen/ops/cos_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/elu_backward_ops.h>
#include <ATen/ops/elu_ops.h>
#include <ATen/ops/eq_ops.h>
#include <ATen/ops/erf_ops.h>
#include <ATen/ops/exp2_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/floor_ops.h>
#include <ATen/ops/ge_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/gt_ops.h>
#include <ATen/ops/hardsigmoid_ops.h>
#include <ATen/ops/hardswish_backward_ops.h>
#include <ATen/ops/hardswish_ops.h>
#include <ATen/ops/hardtanh_backward_ops.h>
#include <ATen/ops/hardtanh_ops.h>
#include <ATen/ops/le_ops.h>
#include <ATen/ops/leaky_relu_backward_ops.h>
#include <ATen/ops/leaky_relu_ops.h>
#include <ATen/ops/lerp_ops.h>
#include <ATen/ops/log1p_ops.h>
#include <ATen/ops/log2_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/lt_ops.h>
#include <ATen/ops/masked_fill_ops.h>
#include <ATen/ops/maximum_ops.h>
#include <ATen/ops/minimum_ops.h>
#include <ATen/ops/mish_backward_ops.h>
#include <ATen/ops/mish_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/ne_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/reciprocal_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/round_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/rsub_ops.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sign_ops.h>
#include <ATen/ops/silu_backward_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/sin_ops.h>
#include <ATen/ops/softplus_backward_ops.h>
#include <ATen/ops/softplus_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/trunc_ops.h>
#include <ATen/ops/where_ops.h>
#include <ATen/ops/zero_ops.h>


namespace npusim::backend {

size_t registerUnboxedElementwiseOperators(torch::Library& library) {
  return unboxed::registerKernels<
      at::_ops::add_Tensor,  // add.Tensor
      at::_ops::add__Tensor,  // add_.Tensor
      at::_ops::sub_Tensor,  // sub.Tensor
      at::_ops::sub__Tensor,  // sub_.Tensor
      at::_ops::rsub_Tensor,  // rsub.Tensor
      at::_ops::mul_Tensor,  // mul.Tensor
      at::_ops::mul__Tensor,  // mul_.Tensor
      at::_ops::div_Tensor,  // div.Tensor
      at::_ops::div__Tensor,  // div_.Tensor
      at::_ops::div_Tensor_mode,  // div.Tensor_mode
      at::_ops::div__Tensor_mode,  // div_.Tensor_mode
      at::_ops::pow_Tensor_Scalar,  // pow.Tensor_Scalar
      at::_ops::pow_Tensor_Tensor,  // pow.Tensor_Tensor
      at::_ops::pow__Scalar,  // pow_.Scalar
      at::_ops::pow_Scalar,  // pow.Scalar
      at::_ops::maximum,  // maximum
      at::_ops::minimum,  // minimum
      at::_ops::eq_Tensor,  // eq.Tensor
      at::_ops::eq_Scalar,  // eq.Scalar
      at::_ops::ne_Scalar,  // ne.Scalar
      at::_ops::ne_Tensor,  // ne.Tensor
      at::_ops::lt_Scalar,  // lt.Scalar
      at::_ops::lt_Tensor,  // lt.Tensor
      at::_ops::gt_Scalar,  // gt.Scalar
      at::_ops::gt_Tensor,  // gt.Tensor
      at::_ops::le_Scalar,  // le.Scalar
      at::_ops::le_Tensor,  // le.Tensor
      at::_ops::ge_Scalar,  // ge.Scalar
      at::_ops::ge_Tensor,  // ge.Tensor
      at::_ops::bitwise_not,  // bitwise_not
      at::_ops::bitwise_and_Tensor,  // bitwise_and.Tensor
      at::_ops::where_self,  // where.self
      at::_ops::masked_fill__Scalar,  // masked_fill_.Scalar
      at::_ops::masked_fill__Tensor,  // masked_fill_.Tensor
      at::_ops::addcmul,  // addcmul
      at::_ops::addcmul_,  // addcmul_
      at::_ops::addcdiv,  // addcdiv
      at::_ops::addcdiv_,  // addcdiv_
      at::_ops::lerp__Scalar,  // lerp_.Scalar
      at::_ops::lerp_Scalar,  // lerp.Scalar
      at::_ops::lerp__Tensor,  // lerp_.Tensor
      at::_ops::clamp,  // clamp
      at::_ops::clamp_,  // clamp_
      at::_ops::clamp_Tensor,  // clamp.Tensor
      at::_ops::clamp_min,  // clamp_min
      at::_ops::clamp_min_,  // clamp_min_
      at::_ops::clamp_max,  // clamp_max
      at::_ops::clamp_max_,  // clamp_max_
      at::_ops::fill__Scalar,  // fill_.Scalar
      at::_ops::fill__Tensor,  // fill_.Tensor
      at::_ops::zero_,  // zero_
      at::_ops::neg,  // neg
      at::_ops::neg_,  // neg_
      at::_ops::exp,  // exp
      at::_ops::exp_,  // exp_
      at::_ops::exp2,  // exp2
      at::_ops::log,  // log
      at::_ops::log_,  // log_
      at::_ops::log2,  // log2
      at::_ops::log1p,  // log1p
      at::_ops::sqrt,  // sqrt
      at::_ops::sqrt_,  // sqrt_
      at::_ops::rsqrt,  // rsqrt
      at::_ops::rsqrt_,  // rsqrt_
      at::_ops::reciprocal,  // reciprocal
      at::_ops::reciprocal_,  // reciprocal_
      at::_ops::sin,  // sin
      at::_ops::cos,  // cos
      at::_ops::tanh,  // tanh
      at::_ops::tanh_,  // tanh_
      at::_ops::sigmoid,  // sigmoid
      at::_ops::sigmoid_,  // sigmoid_
      at::_ops::relu,  // relu
      at::_ops::relu_,  // relu_
      at::_ops::gelu,  // gelu
      at::_ops::gelu_,  // gelu_
      at::_ops::gelu_backward,  // gelu_backward
      at::_ops::silu,  // silu
      at::_ops::silu_,  // silu_
      at::_ops::silu_backward,  // silu_backward
      at::_ops::threshold_backward,  // threshold_backward
      at::_ops::tanh_backward,  // tanh_backward
      at::_ops::sigmoid_backward,  // sigmoid_backward
      at::_ops::hardtanh,  // hardtanh
      at::_ops::hardtanh_,  // hardtanh_
      at::_ops::hardtanh_backward,  // hardtanh_backward
      at::_ops::leaky_relu,  // leaky_relu
      at::_ops::leaky_relu_backward,  // leaky_relu_backward
      at::_ops::elu,  // elu
      at::_ops::elu_backward,  // elu_backward
      at::_ops::softplus,  // softplus
      at::_ops::softplus_backward,  // softplus_backward
      at::_ops::erf,  // erf
      at::_ops::sign,  // sign
      at::_ops::floor,  // floor
      at::_ops::ceil,  // ceil
      at::_ops::round,  // round
      at::_ops::trunc,  // trunc
      at::_ops::mish,  // mish
      at::_ops::mish_backward,  // mish_backward
      at::_ops::hardswish,  // hardswish
      at::_ops::hardswish_backward,  // hardswish_backward
      at::_ops::hardsigmoid  // hardsigmoid
      >(library);
}

}  // namespace npusim::backend
