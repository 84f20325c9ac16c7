"""``npugraph_ex`` served by npusim (only where no real one is installed): TorchAir's light
graph mode, the package behind torch_npu's ``backend="npugraph_ex"`` and
``torch.npu.npugraph_ex``. The implementation is npusim.compile.npugraph_ex_backend."""

from npusim.compile.npugraph_ex_backend import CompilerConfig, compile_fx, get_npu_backend, register_replacement

from . import patterns

__all__ = ["CompilerConfig", "compile_fx", "get_npu_backend", "register_replacement", "patterns"]
