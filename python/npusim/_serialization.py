"""``torch.save`` as torch_npu installs it: the legacy (non-zipfile) format is not used.

torch_npu replaces ``torch.save`` (``torch_npu.utils.serialization.add_serialization_methods``);
with ``_use_new_zipfile_serialization=False`` it prints its warning (the first time only) and
writes the zipfile format anyway, whose records keep npu tensors intact. npusim does the same,
so a checkpoint written under npusim is the file torch_npu would write.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any

import torch

_LEGACY_SAVE_WARNING = (
    'Warning: torch.save with "_use_new_zipfile_serialization = False" is not recommended for npu '
    'tensor, which may bring unexpected errors and hopefully set "_use_new_zipfile_serialization = True"',
    "if it is necessary to use this, please convert the npu tensor to cpu tensor for saving",
)
_warned = False


def _install() -> None:
    if getattr(torch.save, "_npusim_save", False):
        return
    original = torch.save

    @functools.wraps(original)
    def save(
        obj: object,
        f: Any,
        pickle_module: Any = pickle,
        pickle_protocol: int = torch.serialization.DEFAULT_PROTOCOL,
        _use_new_zipfile_serialization: bool = True,
        _disable_byteorder_record: bool = False,
    ) -> None:
        global _warned
        if _use_new_zipfile_serialization is False and not _warned:
            _warned = True
            # torch_npu prints the tuple itself, parentheses and quotes included.
            print(_LEGACY_SAVE_WARNING)
        return original(obj, f, pickle_module, pickle_protocol, True, _disable_byteorder_record)

    save._npusim_save = True
    torch.save = save
