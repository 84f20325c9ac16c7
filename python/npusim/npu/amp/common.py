"""``torch.npu.amp.common`` (the target of ``torch.cuda.amp.common`` under transfer_to_npu)."""

import torch

__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available() -> bool:
    return not torch.npu.is_available()
