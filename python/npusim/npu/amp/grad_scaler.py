"""``torch.npu.amp.GradScaler``: PyTorch's device-generic gradient scaler on ``npu``."""

from __future__ import annotations

import torch

__all__ = ["GradScaler"]


class GradScaler(torch.amp.GradScaler):
    r"""``torch.amp.GradScaler("npu", ...)``."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        super().__init__(
            "npu",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )
