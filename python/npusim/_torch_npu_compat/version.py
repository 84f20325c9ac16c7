"""``torch_npu.version`` as served by npusim."""

import torch

__all__ = ["__version__", "git_version", "cann"]

# torch_npu releases carry the version of the torch they are built for; npusim marks its own
# with the local suffix "+npusim" (a valid PEP 440 version that sorts with that torch release).
__version__ = torch.__version__.split("+")[0] + "+npusim"
# torch_npu records the commit it was built from; npusim has none to report.
git_version = "Unknown"

from npusim.npu.versions import CANN_VERSION as cann  # noqa: E402
