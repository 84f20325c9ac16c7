"""``torch_npu``, served by npusim.

Programs written for Ascend (``import torch_npu``, ``torch_npu.npu.*``,
``from torch_npu.contrib import transfer_to_npu``) run unchanged on the simulated NPU: npusim's
import hook (``npusim._compat_finder``) loads this package under the name ``torch_npu`` when no
real torch_npu is installed. ``torch_npu.npu`` is the same module object as ``torch.npu``.
"""

import sys

import torch

import npusim  # registers the npu device (a no-op when autoload already did)
import npusim.npu as npu
from npusim import _autoload
from npusim._error_code import ErrCode, pta_error

from .version import __version__

sys.modules[__name__ + ".npu"] = npu

__all__ = ["npu", "npu_format_cast", "get_npu_format", "__version__"]


def _unsupported(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"torch_npu.{name} is not supported by npusim yet: the simulated NPU keeps every tensor "
        "in the base (ND) format and has no private formats (NZ, NC1HWC0, FRACTAL_Z)."
        + pta_error(ErrCode.NOT_SUPPORT)
    )


def npu_format_cast(tensor: torch.Tensor, acl_format: int, *args, **kwargs) -> torch.Tensor:
    """Cast a tensor to an NPU storage format (not supported by npusim yet)."""
    raise _unsupported("npu_format_cast")


def get_npu_format(tensor: torch.Tensor) -> int:
    """Return the NPU storage format of a tensor (not supported by npusim yet)."""
    raise _unsupported("get_npu_format")


# torch_npu's own operators (torch.ops.npu.*) as torch_npu.<name>, as torch_npu exports them.
from . import _custom_ops  # noqa: E402

__all__ += _custom_ops.export_npu_ops(globals())
