"""Which calls are dumped, and under which msprobe name.

msprobe hooks the APIs of its support list (``support_wrap_ops.yaml``) and names each call
``{prefix}.{api}.{count}.{forward|backward}`` with the prefix of the namespace it was reached
through: ``Functional`` (``torch.nn.functional``), ``Tensor`` (methods and operators),
``Torch`` (``torch.*``), ``NPU`` (torch_npu's operators), ``Distributed``. The names come from
``npusim/data/compare/msprobe_apis.json`` (msprobe 26.0.0's list, names only).

As msprobe, npusim replaces the attribute in each namespace (``torch.nn.functional.linear``,
``torch.Tensor.__add__``, ``torch.matmul``, ``torch_npu.npu_rms_norm`` and
``torch.ops.npu.npu_rms_norm``), so ``x + y`` is ``Tensor.__add__`` and ``x.add(y)`` is
``Tensor.add``, and a function reached through two namespaces (``F.conv2d is torch.conv2d``) is
named after the one the program used. Calls made before the hooks were installed through a
reference taken earlier are not seen (msprobe has the same limit).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from typing import Any, Callable

__all__ = ["ApiCatalog", "ApiTarget", "api_names", "PREFIX_FUNCTIONAL", "PREFIX_TENSOR", "PREFIX_TORCH",
           "PREFIX_NPU", "PREFIX_DISTRIBUTED", "API_PREFIXES", "risk_level"]

PREFIX_FUNCTIONAL = "Functional"
PREFIX_TENSOR = "Tensor"
PREFIX_TORCH = "Torch"
PREFIX_NPU = "NPU"
PREFIX_DISTRIBUTED = "Distributed"
API_PREFIXES = (PREFIX_DISTRIBUTED, PREFIX_FUNCTIONAL, PREFIX_TORCH, PREFIX_TENSOR, PREFIX_NPU)

_DATA_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "compare",
                          "msprobe_apis.json")


@functools.lru_cache(maxsize=1)
def api_names() -> dict[str, Any]:
    """The support list: ``functional``, ``tensor``, ``torch``, ``torch_npu``, ``distributed``
    name lists and the risk sets ``risk_core`` / ``risk_low``."""
    with open(_DATA_FILE, encoding="utf-8") as handle:
        return json.load(handle)


def risk_level(api_name: str) -> str:
    """msprobe's risk level of an API name without prefix and count: ``core``, ``low`` or
    ``focus`` (``risk_level`` in config.json dumps ``core`` only, ``focus`` all but ``low``)."""
    names = api_names()
    if api_name in names["risk_core"]:
        return "core"
    if api_name in names["risk_low"]:
        return "low"
    return "focus"


def _attribute(root: Any, dotted: str) -> Any:
    value = root
    for part in dotted.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


@dataclasses.dataclass(frozen=True)
class ApiTarget:
    """One hooked attribute: ``owner.attribute`` holds the function msprobe names
    ``{prefix}.{name}``."""

    prefix: str
    name: str
    owner: Any
    attribute: str
    original: Callable


def _owner_and_attribute(root: Any, dotted: str) -> tuple[Any, str] | None:
    if "." in dotted:
        owner_path, attribute = dotted.rsplit(".", 1)
        owner = _attribute(root, owner_path)
    else:
        owner, attribute = root, dotted
    if owner is None or not hasattr(owner, attribute):
        return None
    return owner, attribute


class ApiCatalog:
    """The hooked APIs of this interpreter's torch (and torch_npu when loaded), as msprobe wraps
    them: the attribute of each namespace is replaced, so one function reached through two
    namespaces gets the name of the one the program used."""

    @staticmethod
    def targets(include_npu: bool = True) -> list[ApiTarget]:
        import torch
        import torch.nn.functional as functional

        names = api_names()
        groups: list[tuple[str, Any, list[str]]] = [
            (PREFIX_FUNCTIONAL, functional, names["functional"]),
            (PREFIX_TENSOR, torch.Tensor, names["tensor"]),
            (PREFIX_TORCH, torch, names["torch"]),
        ]
        if include_npu:
            torch_npu = sys.modules.get("torch_npu")
            npu_names = [name for name in names["torch_npu"] if "." not in name]
            if torch_npu is not None:
                groups.append((PREFIX_NPU, torch_npu, npu_names))
            groups.append((PREFIX_NPU, torch.ops.npu, npu_names))
        result = []
        for prefix, root, listed in groups:
            for name in listed:
                found = _owner_and_attribute(root, name)
                if found is None:
                    continue
                owner, attribute = found
                try:
                    original = getattr(owner, attribute)
                except Exception:
                    continue
                if not callable(original) or isinstance(original, type):
                    continue
                result.append(ApiTarget(prefix, name, owner, attribute, original))
        return result

    @staticmethod
    def resolve(prefix: str, name: str) -> Callable | None:
        """The original callable an API name stands for (the explanation re-runs it)."""
        import torch

        if prefix == PREFIX_FUNCTIONAL:
            import torch.nn.functional as functional

            value = _attribute(functional, name)
        elif prefix == PREFIX_TENSOR:
            value = _attribute(torch.Tensor, name)
        elif prefix == PREFIX_TORCH:
            value = _attribute(torch, name)
        elif prefix == PREFIX_NPU:
            value = getattr(torch.ops.npu, name, None)
        elif prefix == PREFIX_DISTRIBUTED:
            import torch.distributed as distributed

            value = _attribute(distributed, name)
        else:
            return None
        # A hooked attribute keeps its original.
        return getattr(value, "_npusim_compare_original", value)
