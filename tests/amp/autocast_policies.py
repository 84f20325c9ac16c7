"""torch_npu's autocast cast policies, the expectation of ``csrc/backend/numerics/Autocast.cpp``.

Source: ``torch_npu/csrc/aten/AutoCastOps.cpp`` in Ascend/pytorch, commit
0c9b75c7dc40361dc05642f8781ce051ebc50876 (without the named-tensor overloads, which PyTorch 2.13
no longer has). Keep this file and Autocast.cpp in step: a test checks that the AutocastPrivateUse1
registrations are exactly these operators.

Each entry maps an aten overload to its policy and a case: a function of ``(make, low)`` that calls
the overload and returns its result, where ``make(shape, dtype)`` gives an npu tensor of values in
[0.1, 0.9) and ``low`` is the autocast dtype. The inputs are chosen so that the policy shows in the
result's dtype: float32 inputs for ``lower_precision_fp`` (expect ``low``), ``low`` inputs for the
float32 policies (expect float32), and mixed ``low``/float32 inputs for ``promote`` (expect
float32).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten
f32 = torch.float32
DEVICE = "npu"

LOWER = "lower_precision_fp"
FP32 = "fp32"
SET_OPT_DTYPE = "fp32_set_opt_dtype"
APPEND_DTYPE = "fp32_append_dtype"
PROMOTE = "promote"


def _long(values, shape=None):
    t = torch.tensor(values, dtype=torch.long)
    return (t.reshape(shape) if shape else t).to(DEVICE)


# Operators whose kernels exist only for CUDA (cuDNN, fused RNN cells, flash attention): the test
# stops them under a dispatch mode after autocast has cast their inputs, and checks those dtypes.
CUDA_ONLY = {
    "cudnn_convolution.default",
    "cudnn_convolution_transpose.default",
    "_thnn_fused_lstm_cell.default",
    "_thnn_fused_gru_cell.default",
    "_scaled_dot_product_flash_attention.default",
}

POLICIES: dict[str, tuple[str, object]] = {
    # -- lower_precision_fp: float32 in, autocast dtype out ----------------------------------
    "_convolution.deprecated": (
        LOWER,
        lambda m, low: aten._convolution.deprecated(
            m((1, 2, 5, 5), f32), m((3, 2, 3, 3), f32), m((3,), f32), [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
            False, False, True),
    ),
    "_convolution.default": (
        LOWER,
        lambda m, low: aten._convolution.default(
            m((1, 2, 5, 5), f32), m((3, 2, 3, 3), f32), m((3,), f32), [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
            False, False, True, True),
    ),
    "conv1d.default": (LOWER, lambda m, low: aten.conv1d.default(m((1, 2, 7), f32), m((3, 2, 3), f32), m((3,), f32))),
    "conv2d.default": (
        LOWER, lambda m, low: aten.conv2d.default(m((1, 2, 5, 5), f32), m((3, 2, 3, 3), f32), m((3,), f32))),
    "conv3d.default": (
        LOWER, lambda m, low: aten.conv3d.default(m((1, 2, 4, 4, 4), f32), m((3, 2, 2, 2, 2), f32), m((3,), f32))),
    "conv_tbc.default": (
        LOWER, lambda m, low: aten.conv_tbc.default(m((6, 2, 3), f32), m((3, 3, 4), f32), m((4,), f32), 1)),
    "conv_transpose1d.default": (
        LOWER, lambda m, low: aten.conv_transpose1d.default(m((1, 2, 5), f32), m((2, 3, 3), f32), m((3,), f32))),
    "conv_transpose2d.input": (
        LOWER, lambda m, low: aten.conv_transpose2d.input(m((1, 2, 4, 4), f32), m((2, 3, 3, 3), f32), m((3,), f32))),
    "conv_transpose3d.input": (
        LOWER,
        lambda m, low: aten.conv_transpose3d.input(m((1, 2, 3, 3, 3), f32), m((2, 3, 2, 2, 2), f32), m((3,), f32)),
    ),
    "convolution.default": (
        LOWER,
        lambda m, low: aten.convolution.default(
            m((1, 2, 5, 5), f32), m((3, 2, 3, 3), f32), m((3,), f32), [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    ),
    "cudnn_convolution.default": (
        LOWER,
        lambda m, low: aten.cudnn_convolution.default(
            m((1, 2, 5, 5), f32), m((3, 2, 3, 3), f32), [0, 0], [1, 1], [1, 1], 1, False, False, True),
    ),
    "cudnn_convolution_transpose.default": (
        LOWER,
        lambda m, low: aten.cudnn_convolution_transpose.default(
            m((1, 2, 4, 4), f32), m((2, 3, 3, 3), f32), [0, 0], [0, 0], [1, 1], [1, 1], 1, False, False, True),
    ),
    "prelu.default": (LOWER, lambda m, low: aten.prelu.default(m((2, 3), f32), m((1,), f32))),
    "addmm.default": (LOWER, lambda m, low: aten.addmm.default(m((2, 4), f32), m((2, 3), f32), m((3, 4), f32))),
    "addmv.default": (LOWER, lambda m, low: aten.addmv.default(m((2,), f32), m((2, 3), f32), m((3,), f32))),
    "addr.default": (LOWER, lambda m, low: aten.addr.default(m((2, 3), f32), m((2,), f32), m((3,), f32))),
    "matmul.default": (LOWER, lambda m, low: aten.matmul.default(m((2, 3), f32), m((3, 4), f32))),
    "einsum.default": (LOWER, lambda m, low: aten.einsum.default("ij,jk->ik", [m((2, 3), f32), m((3, 4), f32)])),
    "mm.default": (LOWER, lambda m, low: aten.mm.default(m((2, 3), f32), m((3, 4), f32))),
    "mv.default": (LOWER, lambda m, low: aten.mv.default(m((2, 3), f32), m((3,), f32))),
    "linear.default": (LOWER, lambda m, low: aten.linear.default(m((2, 3), f32), m((4, 3), f32), m((4,), f32))),
    "addbmm.default": (
        LOWER, lambda m, low: aten.addbmm.default(m((2, 4), f32), m((5, 2, 3), f32), m((5, 3, 4), f32))),
    "baddbmm.default": (
        LOWER, lambda m, low: aten.baddbmm.default(m((5, 2, 4), f32), m((5, 2, 3), f32), m((5, 3, 4), f32))),
    "bmm.default": (LOWER, lambda m, low: aten.bmm.default(m((5, 2, 3), f32), m((5, 3, 4), f32))),
    "chain_matmul.default": (
        LOWER, lambda m, low: aten.chain_matmul.default([m((2, 3), f32), m((3, 4), f32), m((4, 2), f32)])),
    "linalg_multi_dot.default": (
        LOWER, lambda m, low: aten.linalg_multi_dot.default([m((2, 3), f32), m((3, 4), f32), m((4, 2), f32)])),
    "_thnn_fused_lstm_cell.default": (
        LOWER,
        lambda m, low: aten._thnn_fused_lstm_cell.default(
            m((2, 12), f32), m((2, 12), f32), m((2, 3), f32), m((12,), f32), m((12,), f32)),
    ),
    "_thnn_fused_gru_cell.default": (
        LOWER,
        lambda m, low: aten._thnn_fused_gru_cell.default(
            m((2, 9), f32), m((2, 9), f32), m((2, 3), f32), m((9,), f32), m((9,), f32)),
    ),
    "lstm_cell.default": (
        LOWER,
        lambda m, low: aten.lstm_cell.default(
            m((2, 4), f32), [m((2, 3), f32), m((2, 3), f32)], m((12, 4), f32), m((12, 3), f32), m((12,), f32),
            m((12,), f32)),
    ),
    "gru_cell.default": (
        LOWER,
        lambda m, low: aten.gru_cell.default(
            m((2, 4), f32), m((2, 3), f32), m((9, 4), f32), m((9, 3), f32), m((9,), f32), m((9,), f32)),
    ),
    "rnn_tanh_cell.default": (
        LOWER,
        lambda m, low: aten.rnn_tanh_cell.default(
            m((2, 4), f32), m((2, 3), f32), m((3, 4), f32), m((3, 3), f32), m((3,), f32), m((3,), f32)),
    ),
    "rnn_relu_cell.default": (
        LOWER,
        lambda m, low: aten.rnn_relu_cell.default(
            m((2, 4), f32), m((2, 3), f32), m((3, 4), f32), m((3, 3), f32), m((3,), f32), m((3,), f32)),
    ),
    "_scaled_dot_product_flash_attention.default": (
        LOWER,
        lambda m, low: aten._scaled_dot_product_flash_attention.default(
            m((1, 2, 4, 8), f32), m((1, 2, 4, 8), f32), m((1, 2, 4, 8), f32)),
    ),
    "scaled_dot_product_attention.default": (
        LOWER,
        lambda m, low: aten.scaled_dot_product_attention.default(
            m((1, 2, 4, 8), f32), m((1, 2, 4, 8), f32), m((1, 2, 4, 8), f32)),
    ),
    # -- fp32: autocast dtype in, float32 out -------------------------------------------------
    "acos.default": (FP32, lambda m, low: aten.acos.default(m((3,), low))),
    "asin.default": (FP32, lambda m, low: aten.asin.default(m((3,), low))),
    "cosh.default": (FP32, lambda m, low: aten.cosh.default(m((3,), low))),
    "erfinv.default": (FP32, lambda m, low: aten.erfinv.default(m((3,), low))),
    "exp.default": (FP32, lambda m, low: aten.exp.default(m((3,), low))),
    "expm1.default": (FP32, lambda m, low: aten.expm1.default(m((3,), low))),
    "log.default": (FP32, lambda m, low: aten.log.default(m((3,), low))),
    "log10.default": (FP32, lambda m, low: aten.log10.default(m((3,), low))),
    "log2.default": (FP32, lambda m, low: aten.log2.default(m((3,), low))),
    "log1p.default": (FP32, lambda m, low: aten.log1p.default(m((3,), low))),
    "reciprocal.default": (FP32, lambda m, low: aten.reciprocal.default(m((3,), low))),
    "rsqrt.default": (FP32, lambda m, low: aten.rsqrt.default(m((3,), low))),
    "sinh.default": (FP32, lambda m, low: aten.sinh.default(m((3,), low))),
    "tan.default": (FP32, lambda m, low: aten.tan.default(m((3,), low))),
    "pow.Tensor_Scalar": (FP32, lambda m, low: aten.pow.Tensor_Scalar(m((3,), low), 2)),
    "pow.Tensor_Tensor": (FP32, lambda m, low: aten.pow.Tensor_Tensor(m((3,), low), m((3,), low))),
    "pow.Scalar": (FP32, lambda m, low: aten.pow.Scalar(2.0, m((3,), low))),
    "softplus.default": (FP32, lambda m, low: aten.softplus.default(m((3,), low))),
    "layer_norm.default": (
        FP32, lambda m, low: aten.layer_norm.default(m((2, 4), low), [4], m((4,), low), m((4,), low))),
    "native_layer_norm.default": (
        FP32, lambda m, low: aten.native_layer_norm.default(m((2, 4), low), [4], m((4,), low), m((4,), low), 1e-5)),
    "group_norm.default": (
        FP32, lambda m, low: aten.group_norm.default(m((2, 4, 3), low), 2, m((4,), low), m((4,), low))),
    "frobenius_norm.dim": (FP32, lambda m, low: aten.frobenius_norm.dim(m((2, 3), low), [0, 1])),
    "nuclear_norm.default": (FP32, lambda m, low: aten.nuclear_norm.default(m((3, 3), low))),
    "nuclear_norm.dim": (FP32, lambda m, low: aten.nuclear_norm.dim(m((3, 3), low), [0, 1])),
    "cosine_similarity.default": (FP32, lambda m, low: aten.cosine_similarity.default(m((2, 3), low), m((2, 3), low))),
    "poisson_nll_loss.default": (
        FP32, lambda m, low: aten.poisson_nll_loss.default(m((4,), low), m((4,), low), True, False, 1e-8, 1)),
    "cosine_embedding_loss.default": (
        FP32,
        lambda m, low: aten.cosine_embedding_loss.default(m((2, 3), low), m((2, 3), low), _long([1, -1]).to(low)),
    ),
    "nll_loss.default": (FP32, lambda m, low: aten.nll_loss.default(m((2, 3), low), _long([0, 2]))),
    "nll_loss2d.default": (
        FP32, lambda m, low: aten.nll_loss2d.default(m((1, 3, 2, 2), low), _long([0, 1, 2, 1], (1, 2, 2)))),
    "hinge_embedding_loss.default": (
        FP32, lambda m, low: aten.hinge_embedding_loss.default(m((4,), low), _long([1, -1, 1, -1]).to(low))),
    "kl_div.default": (FP32, lambda m, low: aten.kl_div.default(m((4,), low), m((4,), low))),
    "l1_loss.default": (FP32, lambda m, low: aten.l1_loss.default(m((4,), low), m((4,), low))),
    "smooth_l1_loss.default": (FP32, lambda m, low: aten.smooth_l1_loss.default(m((4,), low), m((4,), low))),
    "huber_loss.default": (FP32, lambda m, low: aten.huber_loss.default(m((4,), low), m((4,), low))),
    "mse_loss.default": (FP32, lambda m, low: aten.mse_loss.default(m((4,), low), m((4,), low))),
    "margin_ranking_loss.default": (
        FP32,
        lambda m, low: aten.margin_ranking_loss.default(m((3,), low), m((3,), low), _long([1, -1, 1]).to(low)),
    ),
    "multilabel_margin_loss.default": (
        FP32, lambda m, low: aten.multilabel_margin_loss.default(m((2, 3), low), _long([0, -1, 0, 1, 2, -1], (2, 3)))),
    "soft_margin_loss.default": (FP32, lambda m, low: aten.soft_margin_loss.default(m((4,), low), m((4,), low))),
    "triplet_margin_loss.default": (
        FP32, lambda m, low: aten.triplet_margin_loss.default(m((2, 3), low), m((2, 3), low), m((2, 3), low))),
    "multi_margin_loss.default": (FP32, lambda m, low: aten.multi_margin_loss.default(m((2, 3), low), _long([0, 2]))),
    "binary_cross_entropy_with_logits.default": (
        FP32, lambda m, low: aten.binary_cross_entropy_with_logits.default(m((4,), low), m((4,), low))),
    "dist.default": (FP32, lambda m, low: aten.dist.default(m((3,), low), m((3,), low))),
    "pdist.default": (FP32, lambda m, low: aten.pdist.default(m((3, 2), low))),
    "cdist.default": (FP32, lambda m, low: aten.cdist.default(m((2, 3), low), m((4, 3), low))),
    "renorm.default": (FP32, lambda m, low: aten.renorm.default(m((2, 3), low), 2, 0, 1.0)),
    "logsumexp.default": (FP32, lambda m, low: aten.logsumexp.default(m((2, 3), low), [1])),
    # -- fp32_set_opt_dtype: autocast dtype in, float32 out through the dtype argument -------
    "prod.default": (SET_OPT_DTYPE, lambda m, low: aten.prod.default(m((3,), low))),
    "prod.dim_int": (SET_OPT_DTYPE, lambda m, low: aten.prod.dim_int(m((2, 3), low), 0)),
    "softmax.int": (SET_OPT_DTYPE, lambda m, low: aten.softmax.int(m((2, 3), low), 1)),
    "log_softmax.int": (SET_OPT_DTYPE, lambda m, low: aten.log_softmax.int(m((2, 3), low), 1)),
    "cumprod.default": (SET_OPT_DTYPE, lambda m, low: aten.cumprod.default(m((3,), low), 0)),
    "cumsum.default": (SET_OPT_DTYPE, lambda m, low: aten.cumsum.default(m((3,), low), 0)),
    "linalg_vector_norm.default": (SET_OPT_DTYPE, lambda m, low: aten.linalg_vector_norm.default(m((3,), low))),
    "linalg_matrix_norm.default": (
        SET_OPT_DTYPE, lambda m, low: aten.linalg_matrix_norm.default(m((3, 3), low), 1)),
    "linalg_matrix_norm.str_ord": (
        SET_OPT_DTYPE, lambda m, low: aten.linalg_matrix_norm.str_ord(m((3, 3), low), "fro")),
    "sum.default": (SET_OPT_DTYPE, lambda m, low: aten.sum.default(m((3,), low))),
    "sum.dim_IntList": (SET_OPT_DTYPE, lambda m, low: aten.sum.dim_IntList(m((2, 3), low), [0])),
    # -- fp32_append_dtype: norm through its overload with a dtype ---------------------------
    "norm.Scalar": (APPEND_DTYPE, lambda m, low: aten.norm.Scalar(m((3,), low), 2)),
    "norm.ScalarOpt_dim": (APPEND_DTYPE, lambda m, low: aten.norm.ScalarOpt_dim(m((2, 3), low), 2, [0])),
    # -- promote: autocast dtype and float32 in, float32 out ---------------------------------
    "addcdiv.default": (PROMOTE, lambda m, low: aten.addcdiv.default(m((3,), low), m((3,), f32), m((3,), f32))),
    "addcmul.default": (PROMOTE, lambda m, low: aten.addcmul.default(m((3,), low), m((3,), f32), m((3,), f32))),
    "atan2.default": (PROMOTE, lambda m, low: aten.atan2.default(m((3,), low), m((3,), f32))),
    "bilinear.default": (
        PROMOTE,
        lambda m, low: aten.bilinear.default(m((2, 3), low), m((2, 4), f32), m((5, 3, 4), f32), m((5,), f32)),
    ),
    "cross.default": (PROMOTE, lambda m, low: aten.cross.default(m((2, 3), low), m((2, 3), f32), 1)),
    "dot.default": (PROMOTE, lambda m, low: aten.dot.default(m((3,), low), m((3,), f32))),
    "grid_sampler.default": (
        PROMOTE,
        lambda m, low: aten.grid_sampler.default(m((1, 1, 3, 3), low), m((1, 2, 2, 2), f32) * 2 - 1, 0, 0, False),
    ),
    "index_put.default": (
        PROMOTE, lambda m, low: aten.index_put.default(m((4,), low), [_long([0, 2])], m((2,), f32))),
    "tensordot.default": (PROMOTE, lambda m, low: aten.tensordot.default(m((2, 3), low), m((3, 4), f32), [1], [0])),
    "scatter_add.default": (
        PROMOTE, lambda m, low: aten.scatter_add.default(m((4,), low), 0, _long([0, 1, 1]), m((3,), f32))),
}

# Registered on AutocastPrivateUse1 to refuse, not to cast.
REFUSED = {"binary_cross_entropy.default"}


def expected_dtype(policy: str, low: torch.dtype) -> torch.dtype:
    return low if policy == LOWER else torch.float32
