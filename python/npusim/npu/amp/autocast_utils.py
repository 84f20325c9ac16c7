"""``torch.npu.amp.autocast_utils``, kept importable at its former path: the autocast state of
``torch.npu`` lives in the device module, :mod:`npusim.npu.autocast_utils` (torch_npu's
``torch_npu/npu/autocast_utils.py``)."""

from npusim.npu.autocast_utils import *  # noqa: F401,F403
from npusim.npu.autocast_utils import __all__  # noqa: F401
