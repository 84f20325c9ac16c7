"""torch_npu's optimizer operators whose ``.out`` overload writes ``var, m, v``, called as torch_npu
binds them: ``torch_npu.npu_bert_apply_adam(..., out=(var, m, v))``.

They are typed Python functions over ``torch.ops.npu`` so that ``torch.jit.script`` compiles a
module that calls them, as it compiles torch_npu's bindings (the Scalar arguments are typed
``float`` for TorchScript; eager calls take any number). No ``from __future__ import annotations``
here: TorchScript reads the annotations. TorchScript refuses keyword-only parameters with
defaults, so ``out`` of ``npu_bert_apply_adam`` (whose other parameters have defaults) is an
ordinary last parameter: ``out=(var, m, v)`` is bound by name as in torch_npu. The calls go
through the operator packet, which picks the ``.out`` overload by its ``var, m, v`` keywords
(TorchScript cannot look up an overload attribute).
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

__all__ = ["npu_apply_adam_w", "npu_apply_adam", "npu_bert_apply_adam"]


def _check_out(name: str, out) -> None:
    if not isinstance(out, (tuple, list)) or len(out) != 3 or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")


def npu_apply_adam_w(
    beta1_power: float,
    beta2_power: float,
    lr: float,
    weight_decay: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    grad: Tensor,
    max_grad_norm: Optional[Tensor],
    amsgrad: Optional[bool],
    maximize: Optional[bool],
    *,
    out: Optional[Tuple[Tensor, Tensor, Tensor]] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    if out is None:
        return torch.ops.npu.npu_apply_adam_w(
            beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize
        )
    if not torch.jit.is_scripting():
        _check_out("npu_apply_adam_w", out)
    var, m, v = out
    return torch.ops.npu.npu_apply_adam_w(
        beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize,
        var=var, m=m, v=v,
    )


def npu_apply_adam(
    beta1_power: float,
    beta2_power: float,
    lr: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    grad: Tensor,
    use_locking: Optional[bool],
    use_nesterov: Optional[bool],
    *,
    out: Optional[Tuple[Tensor, Tensor, Tensor]] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    if out is None:
        return torch.ops.npu.npu_apply_adam(
            beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov
        )
    if not torch.jit.is_scripting():
        _check_out("npu_apply_adam", out)
    var, m, v = out
    return torch.ops.npu.npu_apply_adam(
        beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov, var=var, m=m, v=v
    )


def npu_bert_apply_adam(
    lr: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    grad: Tensor,
    max_grad_norm: float,
    global_grad_norm: float,
    weight_decay: float,
    step_size: Optional[float] = None,
    adam_mode: int = 0,
    out: Optional[Tuple[Tensor, Tensor, Tensor]] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    if out is None:
        return torch.ops.npu.npu_bert_apply_adam(
            lr, beta1, beta2, epsilon, grad, max_grad_norm, global_grad_norm, weight_decay, step_size, adam_mode
        )
    if not torch.jit.is_scripting():
        _check_out("npu_bert_apply_adam", out)
    var, m, v = out
    return torch.ops.npu.npu_bert_apply_adam(
        lr, beta1, beta2, epsilon, grad, max_grad_norm, global_grad_norm, weight_decay, step_size, adam_mode,
        var=var, m=m, v=v,
    )


# The module they report: torch_npu for the operator op-plugin exposes (in torch_npu.__all__), that
# of the torch.ops packets they stand for otherwise, as every other unexposed operator attribute
# of torch_npu (PyTorch's public-API rule, which torch_npu's test_public_bindings checks).
npu_bert_apply_adam.__module__ = "torch_npu"
npu_apply_adam_w.__module__ = "torch._ops.npu"
npu_apply_adam.__module__ = "torch._ops.npu"
