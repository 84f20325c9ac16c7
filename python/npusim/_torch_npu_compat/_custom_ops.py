"""torch_npu's own operators as ``torch_npu.<name>``.

torch_npu sets every ``torch.ops.npu`` operator as an attribute of the ``torch_npu`` module at
import (``_export_npu_ops``), and puts a stub at ``torch.<name>`` that tells the user to call
``torch_npu.<name>`` instead. The operators themselves (schemas, npu and Meta kernels, autograd)
are C++ in ``csrc/ops``, loaded with npusim. Two Python adapters keep torch_npu's calling
conventions where the generated torch_npu bindings differ from ``torch.ops``:
``npu_apply_adam_w`` / ``npu_apply_adam`` / ``npu_bert_apply_adam`` take ``out=(var, m, v)``.
"""

from __future__ import annotations

from typing import Any

import torch

from npusim._error_code import ErrCode, pta_error

__all__ = ["npu_operator_names", "export_npu_ops"]


def npu_operator_names() -> list[str]:
    """Names of the operators registered in the ``npu`` namespace (sorted)."""
    names = {
        name.split("::", 1)[1].split(".", 1)[0]
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith("npu::")
    }
    return sorted(names)


_OUT_TUPLE_OPERATORS = ("npu_apply_adam_w", "npu_apply_adam", "npu_bert_apply_adam")


def _deprecated_torch_attribute(name: str):
    def stub(*args: Any, **kwargs: Any):
        raise RuntimeError(
            f"torch.{name} is deprecated and will be removed in future version. "
            f"Use torch_npu.{name} instead." + pta_error(ErrCode.NOT_SUPPORT)
        )

    stub.__name__ = name
    return stub


# The operators op-plugin marks ``exposed`` for the 2.13 line (op_plugin_functions.yaml at
# 5045ad2a, section custom): torch_npu lists only these in ``torch_npu.__all__``; the others
# (backward kernels, the in-place and legacy helpers) are attributes of torch_npu all the same.
PUBLIC_OPERATORS = frozenset({
    "fast_gelu", "npu_bert_apply_adam", "npu_confusion_transpose", "npu_cross_entropy_loss",
    "npu_dynamic_quant", "npu_fast_gelu", "npu_fusion_attention", "npu_grouped_matmul",
    "npu_incre_flash_attention", "npu_max", "npu_moe_finalize_routing", "npu_moe_gating_top_k_softmax",
    "npu_mrope", "npu_prompt_flash_attention", "npu_quant_matmul", "npu_rms_norm", "npu_rotary_mul",
    "npu_scaled_masked_softmax", "npu_scatter_nd_update_", "npu_sign_bits_pack", "npu_sign_bits_unpack",
    "npu_slice", "npu_swiglu",
})


def export_npu_ops(namespace: dict[str, Any]) -> list[str]:
    """Sets every ``torch.ops.npu`` operator in ``namespace`` (the torch_npu module's globals),
    with its docstring, and the ``torch.<name>`` deprecation stubs; returns the names torch_npu
    makes public (its ``__all__`` entries)."""
    from . import _out_tuple_ops
    from ._op_docs import OPERATOR_DOCS

    public = []
    for name in npu_operator_names():
        if name in namespace:
            continue
        operator = getattr(_out_tuple_ops, name) if name in _OUT_TUPLE_OPERATORS else getattr(torch.ops.npu, name)
        if name in OPERATOR_DOCS:
            operator.__doc__ = OPERATOR_DOCS[name]
        namespace[name] = operator
        if not hasattr(torch, name):
            setattr(torch, name, _deprecated_torch_attribute(name))
        if name in PUBLIC_OPERATORS:
            public.append(name)
    return public
