"""``torch_npu.profiler.profiler``: home of ``analyse`` in torch_npu."""

from npusim.profiler import analyse, profile  # noqa: F401
