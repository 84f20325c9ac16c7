"""``torch_npu.version`` as served by npusim."""

import torch

__all__ = ["__version__"]

# torch_npu releases carry the version of the torch they are built for; npusim marks its own
# with the local suffix "+npusim".
__version__ = torch.__version__.split("+")[0] + "+npusim"
