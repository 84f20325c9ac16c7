"""msprobe's dump configuration: the fields of ``config.json`` that npusim honours, with
msprobe's defaults and checks (msprobe 26.0.0, ``core/dump/common_config.py``, ``pt_config.py``).

Common fields: ``task`` (``statistics`` | ``tensor``), ``dump_path``, ``rank`` and ``step`` (lists
of integers or ``"a-b"`` ranges; empty = all), ``level`` (``L0`` modules, ``L1`` APIs, ``mix``
both), ``extra_info`` (stack.json and construct.json), ``async_dump`` (accepted; npusim writes at
once), ``precision`` (``low``; ``high`` computes Mean and Norm in float64), ``risk_level``
(``CORE`` | ``FOCUS`` | ``ALL``; msprobe's default ``FOCUS`` leaves out view/cast-like APIs).
Task fields (``"statistics": {...}`` / ``"tensor": {...}``): ``scope`` (two names: dump from the
first to the second), ``list`` (dump the calls whose name contains an item), ``data_mode``
(``all`` or some of ``forward``, ``backward``, ``input``, ``output``), ``summary_mode``
(``statistics`` | ``md5``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

__all__ = ["DumpConfig", "DumpConfigError", "load_dump_config", "parse_steps_or_ranks", "load_dump_config_file", "TASKS", "LEVELS"]

TASKS = ("statistics", "tensor")
LEVELS = ("L0", "L1", "mix")
_UNSUPPORTED_TASKS = ("acc_check", "overflow_check", "free_benchmark", "structure", "grad_probe", "diff_check",
                      "nan_check", "exception_dump")
_DATA_MODES = ("all", "input", "output", "forward", "backward")
_RISK_LEVELS = ("CORE", "FOCUS", "ALL")
_SUMMARY_MODES = ("statistics", "md5")
_MAXIMUM = 1_000_000


class DumpConfigError(ValueError):
    """An invalid configuration value (the message names the field)."""


@dataclasses.dataclass
class DumpConfig:
    task: str = "statistics"
    dump_path: str = "./dump_path"
    rank: list[int] = dataclasses.field(default_factory=list)
    step: list[int] = dataclasses.field(default_factory=list)
    level: str = "L1"
    extra_info: bool = True
    async_dump: bool = False
    precision: str = "low"
    risk_level: str = "FOCUS"
    scope: list[str] = dataclasses.field(default_factory=list)
    list: list[str] = dataclasses.field(default_factory=list)
    data_mode: list[str] = dataclasses.field(default_factory=lambda: ["all"])
    summary_mode: str = "statistics"

    @property
    def dumps_tensors(self) -> bool:
        return self.task == "tensor"

    @property
    def hooks_apis(self) -> bool:
        return self.level in ("L1", "mix")

    @property
    def hooks_modules(self) -> bool:
        return self.level in ("L0", "mix")

    def dumps(self, direction: str, io: str) -> bool:
        """Whether ``data_mode`` asks for the ``io`` (input/output) of the ``direction``
        (forward/backward) pass, as msprobe's ``_get_allowed_data_mode`` reads it."""
        modes = set(self.data_mode)
        if "all" in modes:
            return True
        if "forward" not in modes and "backward" not in modes:
            modes |= {"forward", "backward"}
        if "input" not in modes and "output" not in modes:
            modes |= {"input", "output"}
        return direction in modes and io in modes


def parse_steps_or_ranks(value: Any, field: str) -> list[int]:
    """msprobe's ``step`` / ``rank`` lists: integers and ``"3"`` / ``"3-5"`` strings."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise DumpConfigError(f"{field} is invalid, it should be a list")
    result: set[int] = set()
    for element in value:
        if isinstance(element, bool) or not isinstance(element, (int, str)):
            raise DumpConfigError(f"{field} element {element} must be an integer or string.")
        if isinstance(element, int):
            if not 0 <= element <= _MAXIMUM:
                raise DumpConfigError(
                    f"Each element of {field} must be between 0 and {_MAXIMUM}, currently it is {element}.")
            result.add(element)
            continue
        parts = element.split("-")
        try:
            if len(parts) == 1:
                low = high = int(parts[0])
            elif len(parts) == 2:
                low, high = int(parts[0]), int(parts[1])
            else:
                raise ValueError
        except ValueError:
            raise DumpConfigError(
                f'The string parameter for {field} only supports formats like "3" or "3-5". '
                f'Now string parameter for {field} is "{element}".') from None
        if not (0 <= low <= _MAXIMUM and 0 <= high <= _MAXIMUM) or low > high:
            raise DumpConfigError(f'The string parameter for {field} "{element}" is not a valid range.')
        result.update(range(low, high + 1))
    return sorted(result)


def _string_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DumpConfigError(f"{field} is invalid, it should be a list[str]")
    return list(value)


def load_dump_config(json_config: dict[str, Any], task: str | None = None, dump_path: str | None = None,
                     level: str | None = None, step: Any = None) -> DumpConfig:
    """A :class:`DumpConfig` from the parsed ``config.json`` (``PrecisionDebugger``'s keyword
    arguments override the file, as in msprobe)."""
    if not isinstance(json_config, dict):
        raise DumpConfigError("config.json must hold a JSON object")
    config = DumpConfig()
    chosen_task = task or json_config.get("task") or "statistics"
    if chosen_task in _UNSUPPORTED_TASKS:
        raise DumpConfigError(
            f"task {chosen_task!r} is not supported by npusim's msprobe; use 'statistics' or 'tensor' "
            "(npusim compare covers the comparison against a CPU benchmark)")
    if chosen_task not in TASKS:
        raise DumpConfigError(f"task is invalid, it should be one of {list(TASKS)}")
    config.task = chosen_task
    path = dump_path if dump_path is not None else json_config.get("dump_path", config.dump_path)
    if not isinstance(path, str) or not path:
        raise DumpConfigError("dump_path is invalid, it should be a string")
    config.dump_path = path
    config.rank = parse_steps_or_ranks(json_config.get("rank"), "rank")
    config.step = parse_steps_or_ranks(step if step is not None else json_config.get("step"), "step")
    chosen_level = level or json_config.get("level") or "L1"
    if chosen_level in ("L2", "debug"):
        raise DumpConfigError(
            f"level {chosen_level!r} is not supported by npusim's msprobe (no kernel-level dump); use L0, L1 or mix")
    if chosen_level not in LEVELS:
        raise DumpConfigError(f"level is invalid, it should be one of {list(LEVELS)}")
    config.level = chosen_level
    for field in ("extra_info", "async_dump"):
        value = json_config.get(field, getattr(config, field))
        if not isinstance(value, bool):
            raise DumpConfigError(f"{field} is invalid, it should be a boolean")
        setattr(config, field, value)
    precision = json_config.get("precision", "low")
    if precision not in ("low", "high"):
        raise DumpConfigError("precision is invalid, it should be one of ['low', 'high']")
    config.precision = precision
    risk = json_config.get("risk_level", "FOCUS")
    if risk and risk not in _RISK_LEVELS:
        raise DumpConfigError(f"risk_level is invalid, it should be one of {list(_RISK_LEVELS)}")
    config.risk_level = risk or "FOCUS"

    section = json_config.get(config.task) or {}
    if not isinstance(section, dict):
        raise DumpConfigError(f"{config.task} is invalid, it should be a JSON object")
    config.scope = _string_list(section.get("scope"), "scope")
    config.list = _string_list(section.get("list"), "list")
    if config.scope and len(config.scope) != 2:
        raise DumpConfigError(f"scope must name two APIs or modules (a range), got {config.scope}")
    for name in config.scope:
        _check_scope_name(name, config.level)
    for item in config.list:
        if item.startswith("name-regex(") and item.endswith(")"):
            try:
                re.compile(item[len("name-regex("):-1])
            except re.error as error:
                raise DumpConfigError(f"list item {item!r} is not a valid regular expression: {error}") from None
    data_mode = section.get("data_mode", ["all"])
    if not isinstance(data_mode, list) or not data_mode or not all(isinstance(m, str) for m in data_mode):
        raise DumpConfigError("data_mode is invalid, it should be a list[str]")
    for mode in data_mode:
        if mode not in _DATA_MODES:
            raise DumpConfigError(f"The element '{mode}' of data_mode {data_mode} is not in {list(_DATA_MODES)}.")
    if "all" in data_mode and len(data_mode) != 1:
        raise DumpConfigError("'all' cannot be combined with other options in data_mode.")
    config.data_mode = list(data_mode)
    summary_mode = section.get("summary_mode", "statistics") if config.task == "statistics" else "statistics"
    if summary_mode not in _SUMMARY_MODES:
        raise DumpConfigError(f"summary_mode is invalid, summary_mode is not in {list(_SUMMARY_MODES)}.")
    config.summary_mode = summary_mode
    return config


_API_NAME = re.compile(r"^(Distributed|Functional|Torch|Tensor|NPU|VF|Aten)\..*\.\d+\.(forward|backward)$")
_MODULE_NAME = re.compile(r"^Module\..*\.(forward|backward)\.\d+$")


def _check_scope_name(name: str, level: str) -> None:
    api, module = bool(_API_NAME.match(name)), bool(_MODULE_NAME.match(name))
    if level == "L1" and not api:
        raise DumpConfigError(f"scope must hold complete API names at level L1, got {name}")
    if level == "L0" and not module:
        raise DumpConfigError(f"scope must hold complete module names at level L0, got {name}")
    if level == "mix" and not (api or module):
        raise DumpConfigError(f"scope must hold complete API or module names at level mix, got {name}")


def load_dump_config_file(path: str, **overrides: Any) -> DumpConfig:
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as error:
            raise DumpConfigError(f"{path} is not valid JSON: {error}") from None
    return load_dump_config(data, **overrides)
