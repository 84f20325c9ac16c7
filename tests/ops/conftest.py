"""Tests of torch_npu's own operators (``torch.ops.npu`` / ``torch_npu.<name>``, C++ in ``csrc/ops``).
Reference implementations live in :mod:`ops_reference`
(plain PyTorch, written from the documented math).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
