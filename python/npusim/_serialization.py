"""The legacy (non-zipfile) ``torch.save`` as torch_npu 2.13 leaves it.

torch_npu (``torch_npu.utils.serialization._add_serialization_methods`` at the 2.13 tag) wraps
``torch.serialization._legacy_save``: it prints a warning the first time (unless warnings are
disabled, or on a rank other than 0) and then runs PyTorch's legacy writer, which cannot write an
npu storage: it copies the storage through a tensor whose storage is not torch_npu's
NPUStorageImpl and stops with "The npu storage desc is unavailable: ...". CPU tensors save as
in PyTorch. npusim does the same, so that a program whose checkpoint torch_npu could not write
does not succeed here. The zipfile format (the default) keeps npu tensors and their formats.
"""

from __future__ import annotations

import functools
import os

import torch

_LEGACY_SAVE_WARNING = (
    'Warning: torch.save with "_use_new_zipfile_serialization = False" is not recommended '
    "for NPU tensors, which may cause unexpected errors. It is better to set "
    '"_use_new_zipfile_serialization = True". '
    "If it is necessary to use this, please convert the NPU tensors to CPU tensors for saving."
)
_NO_NPU_STORAGE_DESC = "The npu storage desc is unavailable: the tensor's storage is not an NPUStorageImpl."
_warned = False


def _should_print_warning() -> bool:
    """torch_npu's rule for its one-time prints: off with TORCH_NPU_WARNING_DISABLE=1 (or the
    older TORCH_NPU_DISABLED_WARNING=1) and on every rank but 0."""
    disabled = os.environ.get("TORCH_NPU_WARNING_DISABLE", os.environ.get("TORCH_NPU_DISABLED_WARNING"))
    if disabled == "1":
        return False
    rank = os.environ.get("RANK")
    return rank is None or rank == "0"


def _install() -> None:
    legacy_save = torch.serialization._legacy_save
    if getattr(legacy_save, "_npusim_legacy_save", False):
        return

    @functools.wraps(legacy_save)
    def npu_legacy_save(obj, f, pickle_module, pickle_protocol):
        global _warned
        if not _warned:
            _warned = True
            if _should_print_warning():
                print(_LEGACY_SAVE_WARNING)
        return legacy_save(obj, f, pickle_module, pickle_protocol)

    npu_legacy_save._npusim_legacy_save = True
    torch.serialization._legacy_save = npu_legacy_save

    # The legacy writer writes each storage with _write_file after the pickled object.
    write_file = torch.UntypedStorage._write_file

    @functools.wraps(write_file)
    def write_storage_file(self, *args, **kwargs):
        if self.device.type == "npu":
            raise RuntimeError(_NO_NPU_STORAGE_DESC)
        return write_file(self, *args, **kwargs)

    torch.UntypedStorage._write_file = write_storage_file
