"""Registrations that run right after a module finishes executing.

Dynamo's device registry, its tracing-rule tables and Inductor's compile path load late (or
never); npusim's registrations with them wait here for their module instead of importing it,
so that a program that never compiles pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

__all__ = ["after_import", "fully_loaded"]

# Registrations that wait for a module to finish executing, by module name. npusim.compile's
# install() puts the device interface here (Dynamo's start-up may ask it as soon as its registry
# exists) and the tracing rules of torch.npu (once the whole torch._dynamo package, its rule
# tables and variable trackers, has loaded); other parts add theirs with after_import().
_PENDING: dict[str, list] = {}


class _RegisterAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs the registrations of ``_PENDING`` right after their module executes."""

    def __init__(self) -> None:
        self._resolving = False
        self._wrapped: dict[str, importlib.abc.Loader] = {}

    def find_spec(self, fullname, path, target=None):
        if fullname not in _PENDING or self._resolving:
            return None
        self._resolving = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving = False
        if spec is None or spec.loader is None:
            return None
        self._wrapped[fullname] = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._wrapped[spec.name].create_module(spec)

    def exec_module(self, module):
        name = module.__spec__.name
        self._wrapped.pop(name).exec_module(module)
        registrations = _PENDING.pop(name, [])
        if not _PENDING:
            sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]
        for register in registrations:
            register()


def fully_loaded(module: str) -> bool:
    """Whether ``module`` is imported and has finished executing."""
    loaded = sys.modules.get(module)
    return loaded is not None and getattr(getattr(loaded, "__spec__", None), "_initializing", False) is False


def after_import(module: str, register) -> None:
    """Run ``register`` now if ``module`` is loaded, else right after it loads (once)."""
    if fully_loaded(module):
        register()
        return
    waiting = _PENDING.setdefault(module, [])
    if register not in waiting:
        waiting.append(register)
    if not any(isinstance(finder, _RegisterAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
