"""``torch_npu._inductor``: Inductor's npu backend.

Importing it registers the npu device with Dynamo (its device interface) and Inductor (the
kernel generator, wrapper code generator and device overrides) at once, as torch_npu does when
it loads its backend here. npusim's generator is Inductor's C++ one running on simulated device
memory (:mod:`npusim.compile.inductor_backend`); without this import it registers itself at the
first compile. ``TORCHINDUCTOR_NPU_BACKEND`` chooses among torch_npu's generators; npusim serves
every known value with its one generator and says so.
"""

from npusim.compile import device_interface as _device_interface
from npusim.compile import inductor_backend as _inductor_backend

__all__ = []


def _load_backend() -> None:
    """Registers the npu device with Dynamo and Inductor (idempotent)."""
    _device_interface.register()
    _inductor_backend.register()


_load_backend()
