"""``torch_npu.profiler.profiler``: home of ``analyse`` and ``profile`` in torch_npu."""

from npusim.profiler import analyse as _analyse
from npusim.profiler import profile  # reports this module (torch_npu.profiler sets it)

from .._public_names import expose as _expose

__all__ = ["profile", "analyse"]

analyse = _expose(_analyse, __name__)
