"""``torch.npu.amp``: automatic mixed precision on the simulated NPU, as in torch_npu.

The autocast cast lists are registered in C++ on the ``AutocastPrivateUse1`` key
(``csrc/backend/numerics/Autocast.cpp``); these classes bind PyTorch's device-generic autocast and gradient
scaler to the ``npu`` device. The device functions they use sit in the device module below:
:mod:`npusim.npu.autocast_utils` (the autocast state of ``torch.npu``) and
:mod:`npusim.npu.inf_nan_mode` (the INF_NAN / saturation mode).

A feature above ``torch.npu``: npusim's package root imports it, which makes it the attribute
``torch.npu.amp``; nothing in the device module imports it. ``torch.npu.amp.autocast_utils`` and
``torch.npu.amp.inf_nan_mode`` stay importable at their former paths (not loaded with ``import
torch``: they only re-export the device module's).
"""

from npusim.npu.amp.autocast_mode import autocast, custom_bwd, custom_fwd
from npusim.npu.amp.grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler"]
