"""``torch_npu.utils._dynamo``: torch_npu's hooks that make the npu device known to Dynamo and
Inductor, which its own modules and tests call explicitly.

``_dynamo_register_interface_for_device()`` registers the npu device interface with Dynamo
(``get_interface_for_device("npu")``: streams, events, device switches and the raw stream of
compiled code); ``register_inductor_npu()`` loads Inductor's npu backend (``torch_npu._inductor``)
unless ``disable_register_inductor_npu()`` turned that off. Both are idempotent.
"""

from __future__ import annotations

import importlib

from npusim.compile import device_interface as _device_interface

__all__ = []

_registration_disabled = False
_backend_loaded = False


def _dynamo_register_interface_for_device() -> None:
    _device_interface.register()


def register_inductor_npu() -> None:
    global _backend_loaded
    if _registration_disabled:
        return
    importlib.import_module("torch_npu._inductor")._load_backend()
    _backend_loaded = True


def is_inductor_npu_initialized() -> bool:
    from npusim.compile import inductor_backend

    return _backend_loaded or inductor_backend._REGISTERED


def disable_register_inductor_npu() -> None:
    global _registration_disabled
    _registration_disabled = True


def enable_register_inductor_npu() -> None:
    global _registration_disabled
    _registration_disabled = False
