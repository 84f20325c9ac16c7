"""``torch.npu.amp.inf_nan_mode``, kept importable at its former path: the INF_NAN /
saturation-mode functions are a property of the device and live in the device module,
:mod:`npusim.npu.inf_nan_mode` (torch_npu has them in ``torch_npu/npu/utils.py``)."""

from npusim.npu.inf_nan_mode import *  # noqa: F401,F403
from npusim.npu.inf_nan_mode import __all__  # noqa: F401
