// The unboxed executor's operators (UnboxedExecutor.h): reductions, softmax and losses, matrix products,
// indexing, normalization, pooling, dropout and random fills, concatenation, sorting and the data-dependent
// operators. One line per aten overload; an overload listed here that npusim implements natively, or that has
// no CPU kernel, is skipped at registration.
#include "backend/executor/UnboxedExecutor.h"

#include <ATen/ops/_adaptive_avg_pool2d_backward_ops.h>
#include <ATen/ops/_adaptive_avg_pool2d_ops.h>
#include <ATen/ops/_index_put_impl_ops.h>
#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_native_batch_norm_legit_ops.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/_unique2_ops.h>
#include <ATen/ops/adaptive_max_pool2d_backward_ops.h>
#include <ATen/ops/adaptive_max_pool2d_ops.h>
#include <ATen/ops/addbmm_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/addmv_ops.h>
#include <ATen/ops/all_ops.h>
#include <ATen/ops/amax_ops.h>
#include <ATen/ops/amin_ops.h>
#include <ATen/ops/any_ops.h>
#include <ATen/ops/argmax_ops.h>
#include <ATen/ops/argmin_ops.h>
#include <ATen/ops/avg_pool2d_backward_ops.h>
#include <ATen/ops/avg_pool2d_ops.h>
#include <ATen/ops/baddbmm_ops.h>
#include <ATen/ops/bernoulli_ops.h>
#include <ATen/ops/binary_cross_entropy_backward_ops.h>
#include <ATen/ops/binary_cross_entropy_ops.h>
#include <ATen/ops/bincount_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/cat_ops.h>
#include <ATen/ops/cumprod_ops.h>
#include <ATen/ops/cumsum_ops.h>
#include <ATen/ops/dot_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/exponential_ops.h>
#include <ATen/ops/flip_ops.h>
#include <ATen/ops/gather_ops.h>
#include <ATen/ops/index_add_ops.h>
#include <ATen/ops/index_fill_ops.h>
#include <ATen/ops/index_ops.h>
#include <ATen/ops/index_select_ops.h>
#include <ATen/ops/linalg_vector_norm_ops.h>
#include <ATen/ops/masked_select_ops.h>
#include <ATen/ops/max_ops.h>
#include <ATen/ops/max_pool2d_with_indices_backward_ops.h>
#include <ATen/ops/max_pool2d_with_indices_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/min_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mse_loss_backward_ops.h>
#include <ATen/ops/mse_loss_ops.h>
#include <ATen/ops/multinomial_ops.h>
#include <ATen/ops/native_batch_norm_backward_ops.h>
#include <ATen/ops/native_batch_norm_ops.h>
#include <ATen/ops/native_dropout_backward_ops.h>
#include <ATen/ops/native_dropout_ops.h>
#include <ATen/ops/native_group_norm_backward_ops.h>
#include <ATen/ops/native_group_norm_ops.h>
#include <ATen/ops/native_layer_norm_backward_ops.h>
#include <ATen/ops/native_layer_norm_ops.h>
#include <ATen/ops/nll_loss2d_backward_ops.h>
#include <ATen/ops/nll_loss2d_forward_ops.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/nll_loss_forward_ops.h>
#include <ATen/ops/nonzero_ops.h>
#include <ATen/ops/norm_ops.h>
#include <ATen/ops/normal_ops.h>
#include <ATen/ops/prod_ops.h>
#include <ATen/ops/random_ops.h>
#include <ATen/ops/roll_ops.h>
#include <ATen/ops/scatter_add_ops.h>
#include <ATen/ops/scatter_ops.h>
#include <ATen/ops/smooth_l1_loss_ops.h>
#include <ATen/ops/std_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/topk_ops.h>
#include <ATen/ops/tril_ops.h>
#include <ATen/ops/triu_ops.h>
#include <ATen/ops/uniform_ops.h>
#include <ATen/ops/unique_consecutive_ops.h>
#include <ATen/ops/upsample_bilinear2d_backward_ops.h>
#include <ATen/ops/upsample_bilinear2d_ops.h>
#include <ATen/ops/upsample_nearest2d_backward_ops.h>
#include <ATen/ops/upsample_nearest2d_ops.h>
#include <ATen/ops/var_mean_ops.h>
#include <ATen/ops/var_ops.h>


namespace npusim::backend {

size_t registerUnboxedNnOperators(torch::Library& library) {
  return unboxed::registerKernels<
      at::_ops::sum_dim_IntList,  // sum.dim_IntList
      at::_ops::mean_dim,  // mean.dim
      at::_ops::max_dim,  // max.dim
      at::_ops::max,  // max
      at::_ops::min,  // min
      at::_ops::min_dim,  // min.dim
      at::_ops::amax,  // amax
      at::_ops::amin,  // amin
      at::_ops::argmax,  // argmax
      at::_ops::argmin,  // argmin
      at::_ops::prod,  // prod
      at::_ops::var_correction,  // var.correction
      at::_ops::std_correction,  // std.correction
      at::_ops::var_mean_correction,  // var_mean.correction
      at::_ops::norm_ScalarOpt_dim,  // norm.ScalarOpt_dim
      at::_ops::linalg_vector_norm,  // linalg_vector_norm
      at::_ops::cumsum,  // cumsum
      at::_ops::any,  // any
      at::_ops::any_dim,  // any.dim
      at::_ops::all,  // all
      at::_ops::all_dim,  // all.dim
      at::_ops::_softmax,  // _softmax
      at::_ops::_softmax_backward_data,  // _softmax_backward_data
      at::_ops::_log_softmax,  // _log_softmax
      at::_ops::_log_softmax_backward_data,  // _log_softmax_backward_data
      at::_ops::nll_loss_forward,  // nll_loss_forward
      at::_ops::nll_loss_backward,  // nll_loss_backward
      at::_ops::nll_loss2d_forward,  // nll_loss2d_forward
      at::_ops::nll_loss2d_backward,  // nll_loss2d_backward
      at::_ops::mse_loss,  // mse_loss
      at::_ops::mse_loss_backward,  // mse_loss_backward
      at::_ops::binary_cross_entropy,  // binary_cross_entropy
      at::_ops::binary_cross_entropy_backward,  // binary_cross_entropy_backward
      at::_ops::smooth_l1_loss,  // smooth_l1_loss
      at::_ops::cat,  // cat
      at::_ops::tril,  // tril
      at::_ops::triu,  // triu
      at::_ops::tril_,  // tril_
      at::_ops::triu_,  // triu_
      at::_ops::flip,  // flip
      at::_ops::roll,  // roll
      at::_ops::index_fill__int_Scalar,  // index_fill_.int_Scalar
      at::_ops::mm,  // mm
      at::_ops::bmm,  // bmm
      at::_ops::addmm,  // addmm
      at::_ops::addmm_,  // addmm_
      at::_ops::baddbmm,  // baddbmm
      at::_ops::baddbmm_,  // baddbmm_
      at::_ops::addmv,  // addmv
      at::_ops::dot,  // dot
      at::_ops::addbmm,  // addbmm
      at::_ops::index_Tensor,  // index.Tensor
      at::_ops::index_select,  // index_select
      at::_ops::_index_put_impl_,  // _index_put_impl_
      at::_ops::index_add_,  // index_add_
      at::_ops::index_add,  // index_add
      at::_ops::gather,  // gather
      at::_ops::scatter_src,  // scatter.src
      at::_ops::scatter__src,  // scatter_.src
      at::_ops::scatter_value,  // scatter.value
      at::_ops::scatter__value,  // scatter_.value
      at::_ops::scatter_add,  // scatter_add
      at::_ops::scatter_add_,  // scatter_add_
      at::_ops::embedding_dense_backward,  // embedding_dense_backward
      at::_ops::masked_select,  // masked_select
      at::_ops::nonzero,  // nonzero
      at::_ops::native_layer_norm,  // native_layer_norm
      at::_ops::native_layer_norm_backward,  // native_layer_norm_backward
      at::_ops::native_batch_norm,  // native_batch_norm
      at::_ops::native_batch_norm_backward,  // native_batch_norm_backward
      at::_ops::_native_batch_norm_legit,  // _native_batch_norm_legit
      at::_ops::_native_batch_norm_legit_no_stats,  // _native_batch_norm_legit.no_stats
      at::_ops::native_group_norm,  // native_group_norm
      at::_ops::native_group_norm_backward,  // native_group_norm_backward
      at::_ops::max_pool2d_with_indices,  // max_pool2d_with_indices
      at::_ops::max_pool2d_with_indices_backward,  // max_pool2d_with_indices_backward
      at::_ops::avg_pool2d,  // avg_pool2d
      at::_ops::avg_pool2d_backward,  // avg_pool2d_backward
      at::_ops::_adaptive_avg_pool2d,  // _adaptive_avg_pool2d
      at::_ops::_adaptive_avg_pool2d_backward,  // _adaptive_avg_pool2d_backward
      at::_ops::adaptive_max_pool2d,  // adaptive_max_pool2d
      at::_ops::adaptive_max_pool2d_backward,  // adaptive_max_pool2d_backward
      at::_ops::upsample_nearest2d,  // upsample_nearest2d
      at::_ops::upsample_nearest2d_backward,  // upsample_nearest2d_backward
      at::_ops::upsample_bilinear2d,  // upsample_bilinear2d
      at::_ops::upsample_bilinear2d_backward,  // upsample_bilinear2d_backward
      at::_ops::native_dropout,  // native_dropout
      at::_ops::native_dropout_backward,  // native_dropout_backward
      at::_ops::bernoulli__float,  // bernoulli_.float
      at::_ops::bernoulli__Tensor,  // bernoulli_.Tensor
      at::_ops::uniform_,  // uniform_
      at::_ops::normal_,  // normal_
      at::_ops::random_,  // random_
      at::_ops::random__from,  // random_.from
      at::_ops::random__to,  // random_.to
      at::_ops::exponential_,  // exponential_
      at::_ops::multinomial,  // multinomial
      at::_ops::topk,  // topk
      at::_ops::cumprod,  // cumprod
      at::_ops::bincount,  // bincount
      at::_ops::unique_consecutive,  // unique_consecutive
      at::_ops::_unique2  // _unique2
      >(library);
}

}  // namespace npusim::backend
