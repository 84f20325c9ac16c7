// The unboxed executor's operators (UnboxedExecutor.h): the multi-tensor _foreach_ operators of the
// optimizers (one fused kernel each on npu; boxing their lists would copy every parameter, taking the GIL for
// each). One line per aten overload; an overload listed here that npusim implements natively, or that has no
// CPU kernel, is skipped at registration.
#include "backend/executor/UnboxedExecutor.h"

#include <ATen/ops/_foreach_abs_ops.h>
#include <ATen/ops/_foreach_add_ops.h>
#include <ATen/ops/_foreach_addcdiv_ops.h>
#include <ATen/ops/_foreach_addcmul_ops.h>
#include <ATen/ops/_foreach_clamp_max_ops.h>
#include <ATen/ops/_foreach_clamp_min_ops.h>
#include <ATen/ops/_foreach_copy_ops.h>
#include <ATen/ops/_foreach_div_ops.h>
#include <ATen/ops/_foreach_lerp_ops.h>
#include <ATen/ops/_foreach_maximum_ops.h>
#include <ATen/ops/_foreach_mul_ops.h>
#include <ATen/ops/_foreach_neg_ops.h>
#include <ATen/ops/_foreach_norm_ops.h>
#include <ATen/ops/_foreach_pow_ops.h>
#include <ATen/ops/_foreach_reciprocal_ops.h>
#include <ATen/ops/_foreach_sign_ops.h>
#include <ATen/ops/_foreach_sqrt_ops.h>
#include <ATen/ops/_foreach_sub_ops.h>
#include <ATen/ops/_foreach_zero_ops.h>


namespace npusim::backend {

size_t registerUnboxedForeachOperators(torch::Library& library) {
  return unboxed::registerKernels<
      at::_ops::_foreach_mul__Scalar,  // _foreach_mul_.Scalar
      at::_ops::_foreach_mul__List,  // _foreach_mul_.List
      at::_ops::_foreach_mul__Tensor,  // _foreach_mul_.Tensor
      at::_ops::_foreach_mul__ScalarList,  // _foreach_mul_.ScalarList
      at::_ops::_foreach_mul_Scalar,  // _foreach_mul.Scalar
      at::_ops::_foreach_mul_List,  // _foreach_mul.List
      at::_ops::_foreach_mul_Tensor,  // _foreach_mul.Tensor
      at::_ops::_foreach_add__Scalar,  // _foreach_add_.Scalar
      at::_ops::_foreach_add__List,  // _foreach_add_.List
      at::_ops::_foreach_add__ScalarList,  // _foreach_add_.ScalarList
      at::_ops::_foreach_add_Scalar,  // _foreach_add.Scalar
      at::_ops::_foreach_add_List,  // _foreach_add.List
      at::_ops::_foreach_add_ScalarList,  // _foreach_add.ScalarList
      at::_ops::_foreach_add__Tensor,  // _foreach_add_.Tensor
      at::_ops::_foreach_sub__Scalar,  // _foreach_sub_.Scalar
      at::_ops::_foreach_sub__List,  // _foreach_sub_.List
      at::_ops::_foreach_sub_Scalar,  // _foreach_sub.Scalar
      at::_ops::_foreach_sub_List,  // _foreach_sub.List
      at::_ops::_foreach_div__Scalar,  // _foreach_div_.Scalar
      at::_ops::_foreach_div__ScalarList,  // _foreach_div_.ScalarList
      at::_ops::_foreach_div__List,  // _foreach_div_.List
      at::_ops::_foreach_div__Tensor,  // _foreach_div_.Tensor
      at::_ops::_foreach_div_Scalar,  // _foreach_div.Scalar
      at::_ops::_foreach_div_ScalarList,  // _foreach_div.ScalarList
      at::_ops::_foreach_div_List,  // _foreach_div.List
      at::_ops::_foreach_div_Tensor,  // _foreach_div.Tensor
      at::_ops::_foreach_addcdiv__Scalar,  // _foreach_addcdiv_.Scalar
      at::_ops::_foreach_addcdiv__ScalarList,  // _foreach_addcdiv_.ScalarList
      at::_ops::_foreach_addcdiv__Tensor,  // _foreach_addcdiv_.Tensor
      at::_ops::_foreach_addcmul__Scalar,  // _foreach_addcmul_.Scalar
      at::_ops::_foreach_addcmul__ScalarList,  // _foreach_addcmul_.ScalarList
      at::_ops::_foreach_addcmul__Tensor,  // _foreach_addcmul_.Tensor
      at::_ops::_foreach_sqrt,  // _foreach_sqrt
      at::_ops::_foreach_sqrt_,  // _foreach_sqrt_
      at::_ops::_foreach_lerp__Scalar,  // _foreach_lerp_.Scalar
      at::_ops::_foreach_lerp__List,  // _foreach_lerp_.List
      at::_ops::_foreach_norm_Scalar,  // _foreach_norm.Scalar
      at::_ops::_foreach_zero_,  // _foreach_zero_
      at::_ops::_foreach_copy_,  // _foreach_copy_
      at::_ops::_foreach_neg,  // _foreach_neg
      at::_ops::_foreach_neg_,  // _foreach_neg_
      at::_ops::_foreach_maximum__List,  // _foreach_maximum_.List
      at::_ops::_foreach_reciprocal_,  // _foreach_reciprocal_
      at::_ops::_foreach_pow_ScalarAndTensor,  // _foreach_pow.ScalarAndTensor
      at::_ops::_foreach_clamp_max__Scalar,  // _foreach_clamp_max_.Scalar
      at::_ops::_foreach_clamp_min__Scalar,  // _foreach_clamp_min_.Scalar
      at::_ops::_foreach_sign,  // _foreach_sign
      at::_ops::_foreach_abs  // _foreach_abs
      >(library);
}

}  // namespace npusim::backend
