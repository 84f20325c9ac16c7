"""``torch_npu.utils.save_async``: ``torch.save`` on a background thread and a dedicated stream.

The call returns at once; a thread of the same device serialises ``obj`` on a save stream of its
own (the device-to-host copies of its tensors run there) and then writes the file. With
``model`` given, the first call registers a full backward hook on it that makes the current
stream wait for the save stream, so that the next backward pass (and the optimizer step after
it) cannot change the parameters before they are copied.

On npusim a "device" copy is a host memory copy made by the saving thread, so the hook also
waits on the host until the pending saves of the device have taken their copies; the saved
values are those of the moment of the call, as on the chip.
"""

from __future__ import annotations

import io
import pickle
import threading
from typing import Any

import torch

from npusim._error_code import ErrCode, pta_error

__all__ = ["save_async"]

_save_streams: dict[int, Any] = {}  # device -> the save stream
_pending: dict[int, list[threading.Event]] = {}  # device -> copies not yet taken
_lock = threading.Lock()


def _wait_for_copies(device: int) -> None:
    with _lock:
        pending = list(_pending.get(device, ()))
    for copied in pending:
        copied.wait()


class _WaitForSave:
    """The backward hook of ``save_async(..., model=)``: the backward pass goes on once the
    pending saves of the device have their copies (a module-level class, so that the model,
    hook included, can itself be saved)."""

    def __init__(self, device: int):
        self.device = device

    def __call__(self, *args):
        _wait_for_copies(self.device)
        stream = _save_streams.get(self.device)
        if stream is not None:
            torch.npu.current_stream().wait_stream(stream)


def _save_thread(save_args: tuple, device: int, copied: threading.Event) -> None:
    obj, f, pickle_module, pickle_protocol, use_new_zipfile, disable_byteorder = save_args
    torch.npu.set_device(device)
    buffer = io.BytesIO()
    try:
        with torch.npu.stream(_save_streams[device]):
            # The device-to-host copies of the tensors, on the save stream.
            torch.save(obj, buffer, pickle_module, pickle_protocol, use_new_zipfile, disable_byteorder)
    finally:
        copied.set()
        with _lock:
            _pending[device].remove(copied)
    data = buffer.getvalue()
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        with open(f, "wb") as handle:
            handle.write(data)
    else:
        f.write(data)


def save_async(
    obj: object,
    f,
    pickle_module: Any = pickle,
    pickle_protocol: int = torch.serialization.DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
    model: torch.nn.Module = None,
) -> None:
    r"""Save ``obj`` to ``f`` as ``torch.save`` does, asynchronously (see the module docstring)."""
    if _use_new_zipfile_serialization is False:
        raise RuntimeError(
            'Error: torch_npu.save_async with "_use_new_zipfile_serialization = False"'
            " is not recommended for npu tensor, which may bring unexpected errors and hopefully"
            ' set "_use_new_zipfile_serialization = True"',
            "if it is necessary to use this, please convert the npu tensor to cpu tensor for saving"
            + pta_error(ErrCode.PARAM),
        )
    device = torch.npu.current_device()
    with _lock:
        first = device not in _save_streams
        if first:
            _save_streams[device] = torch.npu.Stream(device)
        copied = threading.Event()
        _pending.setdefault(device, []).append(copied)
    if first and isinstance(model, torch.nn.Module):
        model.register_full_backward_hook(_WaitForSave(device))
    save_args = (obj, f, pickle_module, pickle_protocol, _use_new_zipfile_serialization, _disable_byteorder_record)
    threading.Thread(target=_save_thread, args=(save_args, device, copied)).start()
