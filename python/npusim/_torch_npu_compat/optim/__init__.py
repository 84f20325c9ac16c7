"""``torch_npu.optim``: fused optimizers on torch_npu's fused optimizer kernel.

``NpuFusedAdamW`` and ``NpuFusedAdam`` compute the standard ``torch.optim.AdamW`` / ``Adam`` math
(decoupled decay, bias correction, optional amsgrad and maximize), each parameter's step as one
``npu_apply_adam_w`` kernel. torch_npu runs one kernel over parameters combined into flat
buffers (``torch_npu.utils.npu_combine_tensors``); npusim launches one per parameter, so its
estimate counts more launches than the real optimizer for models with many small parameters.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

__all__ = ["NpuFusedAdamW", "NpuFusedAdam"]


class _NpuFusedAdamBase(torch.optim.Optimizer):
    _decoupled = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                if param.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                if param.device.type != "npu":
                    raise RuntimeError(f"{type(self).__name__} only supports npu parameters, got {param.device}")
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                state["step"] += 1
                step = state["step"]
                grad = param.grad
                weight_decay = group["weight_decay"]
                if not self._decoupled and weight_decay != 0:
                    # Adam: L2 penalty added to the gradient.
                    grad = (-grad if group["maximize"] else grad).add(param, alpha=weight_decay)
                    grad = -grad if group["maximize"] else grad
                    weight_decay = 0.0
                max_state = state.get("max_exp_avg_sq")
                # The kernel takes beta^(step-1) and multiplies once more.
                torch.ops.npu.npu_apply_adam_w.out(
                    beta1 ** (step - 1),
                    beta2 ** (step - 1),
                    group["lr"],
                    weight_decay,
                    beta1,
                    beta2,
                    group["eps"],
                    grad,
                    max_state,
                    group["amsgrad"],
                    group["maximize"],
                    var=param,
                    m=state["exp_avg"],
                    v=state["exp_avg_sq"],
                )
                if max_state is not None:
                    torch.maximum(max_state, state["exp_avg_sq"], out=max_state)
        return loss


class NpuFusedAdamW(_NpuFusedAdamBase):
    """AdamW (decoupled weight decay) with torch_npu's fused kernel; ``torch.optim.AdamW`` math."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


class NpuFusedAdam(_NpuFusedAdamBase):
    """Adam (L2 weight decay on the gradient) with torch_npu's fused kernel; ``torch.optim.Adam`` math."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
