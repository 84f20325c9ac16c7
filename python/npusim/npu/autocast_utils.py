"""The autocast functions of ``torch.npu`` (torch_npu's ``torch_npu/npu/autocast_utils.py`` and
``is_bf16_supported``).

The cast policies themselves are registered in C++ on the ``AutocastPrivateUse1`` key
(``csrc/backend/numerics/Autocast.cpp``); these functions read and set the thread's autocast state for
``npu`` and say which dtypes the simulated chip supports.
"""

from __future__ import annotations

import torch

__all__ = [
    "get_amp_supported_dtype",
    "is_bf16_supported",
    "is_autocast_enabled",
    "set_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_dtype",
]

# torch_npu's SocVersion of the first chip with bfloat16 (Ascend910B1, the A2 generation).
_FIRST_BF16_SOC_VERSION = 220


def is_bf16_supported(including_emulation: bool = True) -> bool:
    r"""Return whether the simulated chip supports bfloat16: the A2/A3 generations
    (Ascend910B*) do, the Atlas training series (Ascend910A) does not."""
    from npusim import _C

    return int(_C._chip_info()["soc_version_id"]) >= _FIRST_BF16_SOC_VERSION


def get_amp_supported_dtype() -> list[torch.dtype]:
    r"""Return the dtypes ``torch.autocast("npu", dtype=...)`` accepts; as in torch_npu, float32 is
    one of them, and bfloat16 only on chips that support it."""
    if is_bf16_supported():
        return [torch.float16, torch.bfloat16, torch.float32]
    return [torch.float16, torch.float32]


def is_autocast_enabled() -> bool:
    r"""Return whether autocast is on for ``npu`` in the current thread."""
    return torch.is_autocast_enabled("npu")


def set_autocast_enabled(enabled: bool) -> None:
    r"""Turn autocast for ``npu`` on or off in the current thread."""
    torch.set_autocast_enabled("npu", enabled)


def get_autocast_dtype() -> torch.dtype:
    r"""Return the lower-precision dtype of autocast for ``npu`` (float16 unless set)."""
    return torch.get_autocast_dtype("npu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    r"""Set the lower-precision dtype of autocast for ``npu``."""
    torch.set_autocast_dtype("npu", dtype)
