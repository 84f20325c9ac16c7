"""The files of one dumped step, in msprobe's layout::

    {dump_path}/step{N}/rank{R}/      (proc{pid} when torch.distributed is not initialised)
        dump.json        {"task", "level", "framework": "pytorch", "dump_data_dir", "data": {...}}
        stack.json       {"0": [[names...], [stack lines...]], ...}   (extra_info)
        construct.json   {name: parent module name or null}            (extra_info)
        dump_tensor_data/{name}.{input|kwargs|output|parameters}.{position}.pt   (task tensor)
        npusim_numerics.json   npusim's addition: the numerics switches each call ran under

Entries keep the order in which calls finished; a module's entry moves to the end when its
forward completes, as msprobe's writer does. Tensor files hold CPU copies (``torch.load`` reads
them anywhere; msprobe's own reader maps every file to the CPU too).
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch

__all__ = ["DumpWriter", "rank_directory_name", "TENSOR_DATA_DIRECTORY", "NUMERICS_FILE"]

TENSOR_DATA_DIRECTORY = "dump_tensor_data"
NUMERICS_FILE = "npusim_numerics.json"


def rank_directory_name(rank: int | None) -> str:
    return f"rank{rank}" if rank is not None else f"proc{os.getpid()}"


def _write_json(path: str, data: Any) -> None:
    # Replace by rename: a reader never sees half a file.
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    os.replace(temporary, path)


class DumpWriter:
    """Collects one step's entries and writes them out on :meth:`flush`."""

    def __init__(self, task: str, level: str, extra_info: bool = True) -> None:
        self.task = task
        self.level = level
        self.extra_info = extra_info
        self.directory: str | None = None
        self.tensor_directory: str | None = None
        self._data: dict[str, dict] = {}
        self._stacks: dict[tuple, list[str]] = {}
        self._construct: dict[str, Any] = {}
        self._numerics: dict[str, Any] = {"calls": {}}
        self._dirty = False

    def open(self, dump_path: str, step: int, rank: int | None) -> str:
        """Starts the files of ``step`` (flushing the previous one); returns the rank folder."""
        self.flush()
        self.directory = os.path.join(dump_path, f"step{step}", rank_directory_name(rank))
        os.makedirs(self.directory, exist_ok=True)
        self.tensor_directory = None
        if self.task == "tensor":
            self.tensor_directory = os.path.join(self.directory, TENSOR_DATA_DIRECTORY)
            os.makedirs(self.tensor_directory, exist_ok=True)
        self._data, self._stacks, self._construct = {}, {}, {}
        self._numerics = {"calls": {}}
        self._dirty = True
        self.flush()
        return self.directory

    @property
    def is_open(self) -> bool:
        return self.directory is not None

    def update(self, name: str, info: dict) -> None:
        """Adds to the entry ``name`` (msprobe's ``update_data``: a module's entry moves to the end
        when it is completed, an API's stays where it began)."""
        existing = self._data.get(name)
        if existing is None:
            self._data[name] = dict(info)
        elif name.startswith("Module."):
            del self._data[name]
            existing.update(info)
            self._data[name] = existing
        else:
            existing.update(info)
        self._dirty = True

    def has_entry(self, name: str) -> bool:
        return name in self._data

    def add_stack(self, name: str, lines: tuple[str, ...]) -> None:
        if not self.extra_info:
            return
        self._stacks.setdefault(lines, []).append(name)
        self._dirty = True

    def add_construct(self, name: str, parent: str | None) -> None:
        if not self.extra_info:
            return
        self._construct[name] = parent
        self._dirty = True

    def add_numerics(self, name: str, record: dict) -> None:
        self._numerics["calls"][name] = record
        self._dirty = True

    def set_numerics_header(self, **values: Any) -> None:
        self._numerics.update(values)
        self._dirty = True

    def save_tensor(self, tensor: torch.Tensor, data_name: str) -> bool:
        if self.tensor_directory is None:
            return False
        try:
            copy = tensor.detach()
            if copy.is_meta:
                return False
            copy = copy.to("cpu", copy=True).contiguous() if copy.device.type != "cpu" else copy.clone().contiguous()
            torch.save(copy, os.path.join(self.tensor_directory, data_name))
        except Exception:
            return False
        return True

    def flush(self) -> None:
        if self.directory is None or not self._dirty:
            return
        _write_json(os.path.join(self.directory, "dump.json"), {
            "task": self.task, "level": self.level, "framework": "pytorch",
            "dump_data_dir": self.tensor_directory, "data": self._data,
        })
        if self.extra_info:
            stacks = {str(index): [names, list(lines)] for index, (lines, names) in enumerate(self._stacks.items())}
            _write_json(os.path.join(self.directory, "stack.json"), stacks)
            _write_json(os.path.join(self.directory, "construct.json"), self._construct)
        _write_json(os.path.join(self.directory, NUMERICS_FILE), self._numerics)
        self._dirty = False

    def close(self) -> None:
        self.flush()
        self.directory = None
        self.tensor_directory = None
