"""torch_npu's public names for npusim's objects.

PyTorch's public-API rule (which torch_npu's own test applies to every torch_npu module): a
public name's ``__module__`` starts with the module that exposes it. The torch_npu face serves
objects that npusim defines elsewhere; :func:`expose` gives each the module of its torch_npu name
without changing npusim's object where it can: a function is served as a copy of itself (same
code, globals, defaults and docstring) that reports torch_npu's module; a class or enum, which
has one identity, reports it in place.
"""

from __future__ import annotations

import functools
import types
from typing import Any

__all__ = ["expose", "torch_npu_module"]


_COMPAT_PACKAGE = __name__.rpartition(".")[0]  # npusim._torch_npu_compat, served as torch_npu


def torch_npu_module(module: str) -> str:
    """The torch_npu name of a module of this package (``__name__`` is npusim's name when the
    package was imported under it before being served as torch_npu)."""
    if module == _COMPAT_PACKAGE or module.startswith(_COMPAT_PACKAGE + "."):
        return "torch_npu" + module[len(_COMPAT_PACKAGE):]
    return module


def expose(obj: Any, module: str) -> Any:
    """``obj`` as the public name it has in the torch_npu module ``module`` (a module of this
    package may be given by its npusim name)."""
    module = torch_npu_module(module)
    if isinstance(obj, types.FunctionType):
        copy = types.FunctionType(obj.__code__, obj.__globals__, obj.__name__, obj.__defaults__, obj.__closure__)
        functools.update_wrapper(copy, obj, updated=())
        del copy.__wrapped__
        copy.__kwdefaults__ = obj.__kwdefaults__
        copy.__module__ = module
        return copy
    if isinstance(obj, type):
        obj.__module__ = module
        return obj
    return obj
