"""``torch_npu.contrib.transfer_to_npu``: importing it patches PyTorch so that CUDA code runs on
the npu device. See ``npusim._transfer_to_npu`` for what is patched."""

from npusim import _transfer_to_npu

__all__ = []

_transfer_to_npu.apply()
