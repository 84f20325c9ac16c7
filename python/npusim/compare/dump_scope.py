"""Which calls of a running dump are written: msprobe's ``scope``, ``list`` and ``risk_level``.

- ``scope`` = [first, last]: dump from the call (or module) named ``first`` to the one named
  ``last``. At level L1 both are API names, at L0 module names (a module range covers what runs
  inside it), at ``mix`` either.
- ``list``: dump the calls whose name contains one of the items (``"linear"``,
  ``"Functional.linear.0.forward"``) or matches ``name-regex(...)``; at level ``mix`` an item
  that names a module also dumps everything that runs inside it.
- without either, ``risk_level`` filters APIs (``FOCUS``, msprobe's default, leaves out the
  view / cast / factory APIs of msprobe's low-risk set; ``CORE`` keeps matrix products,
  convolutions, normalisations, embeddings, attention and torch_npu operators; ``ALL``
  everything). Modules are always dumped.

Each call is decided once (msprobe decides an API's input and output separately, so the last
API of a scope loses its output; npusim keeps it).
"""

from __future__ import annotations

import re

from .api_catalog import risk_level
from .dump_config import DumpConfig

__all__ = ["DumpScope"]

_COUNT_AND_DIRECTION = re.compile(r"\.\d+\.(forward|backward)$")


def _api_name_of(call_name: str) -> tuple[str, str]:
    """``("Functional", "linear")`` of ``Functional.linear.0.forward``."""
    base = _COUNT_AND_DIRECTION.sub("", call_name)
    prefix, _, api = base.partition(".")
    return prefix, api


class DumpScope:
    def __init__(self, config: DumpConfig) -> None:
        self.level = config.level
        self.range = list(config.scope)
        self.items = list(config.list)
        self.risk = config.risk_level
        self.in_range = False
        self.in_list = False
        self._list_modules: set[str] = set()

    @property
    def filters(self) -> bool:
        return bool(self.range or self.items)

    def _listed(self, name: str) -> bool:
        if not self.items:
            return True
        for item in self.items:
            if item.startswith("name-regex(") and item.endswith(")"):
                if re.search(item[len("name-regex("):-1], name):
                    return True
            elif item in name:
                return True
        return False

    def _risk_allows(self, name: str) -> bool:
        if self.risk == "ALL" or self.level not in ("L1", "mix") or name.startswith("Module."):
            return True
        _, api = _api_name_of(name)
        level = risk_level(api)
        if self.risk == "CORE":
            return level == "core"
        return level != "low"

    def check(self, name: str) -> bool:
        """Whether the call or module ``name`` is dumped (a range's start and end move here)."""
        if not self.filters:
            return self._risk_allows(name)
        if self.level == "L0":
            return (not self.range or self.in_range) and self._listed(name)
        if self.range and name == self.range[0]:
            self.in_range = True
        result = False
        if not self.range or self.in_range:
            result = True if (self.level == "mix" and self.in_list) else self._listed(name)
        if self.range and name == self.range[1]:
            self.in_range = False
        return result

    def begin_module(self, name: str) -> None:
        if self.level == "L1":
            return
        if self.range and name == self.range[0]:
            self.in_range = True
        if self.level == "mix" and any(item in name for item in self.items if not item.startswith("name-regex(")):
            self.in_list = True
            self._list_modules.add(name)

    def end_module(self, name: str) -> None:
        if self.level == "L1":
            return
        if self.range and name == self.range[1]:
            self.in_range = False
        self._list_modules.discard(name)
        if not self._list_modules:
            self.in_list = False
