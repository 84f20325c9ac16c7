"""``torch_npu.jit``: torch_npu's TorchScript graph optimisation for the NPU.

``optimize(jit_mod)`` runs PyTorch's inference optimisation on a ``ScriptModule`` (freezing and
folding, as ``torch.jit.optimize_for_inference``) and then torch_npu's fusion pass, which
replaces the exact GELU (``aten::gelu(x, 'none')``) by torch_npu's fused ``npu::fast_gelu``
(``x * sigmoid(1.702 x)``, one AI Core kernel). The rewritten graph runs, saves and loads like
any TorchScript graph; its results differ from the exact GELU by the approximation.
"""

from __future__ import annotations

import torch

__all__ = ["optimize"]

# aten::gelu with approximate='none' (the exact GELU) and torch_npu's fused replacement.
_EXACT_GELU = """
    graph(%x):
        %approximate = prim::Constant[value='none']()
        %out = aten::gelu(%x, %approximate)
        return (%out)
"""
_FAST_GELU = """
    graph(%x):
        %out = npu::fast_gelu(%x)
        return (%out)
"""


def _fast_gelu_pass(jit_mod) -> None:
    torch._C._jit_pass_custom_pattern_based_rewrite_graph(_EXACT_GELU, _FAST_GELU, jit_mod.graph)


def optimize(jit_mod):
    """Optimises a traced or scripted module or function in place for inference on the NPU."""
    if isinstance(jit_mod, torch.jit.ScriptModule):
        torch.jit.optimize_for_inference(jit_mod)
    _fast_gelu_pass(jit_mod)
