"""The data the migration tools judge APIs by: the rules, the unsupported-API list, the
precision/performance advice and affinity APIs of one torch_npu release line
(``npusim/data/migration``), and the placement table (``npusim/data/placement``), which says
which aten operators run on the AI CPU or fall back to the CPU."""

from __future__ import annotations

import functools
import importlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

DATA_DIRECTORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
RELEASE_LINES = ("2.13",)


class SupportDataError(ValueError):
    """A data file is missing or malformed (the message names the file)."""


def _load_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as error:
        raise SupportDataError(f"cannot read migration data file {path}: {error.strerror}") from error
    except ValueError as error:
        raise SupportDataError(f"migration data file {path} is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise SupportDataError(f"migration data file {path}: expected a JSON object")
    return data


@dataclass
class PlacementRule:
    operator: str
    placement: str
    condition: str
    sync: bool


@dataclass
class SupportData:
    release_line: str
    rules: dict[str, Any]
    unsupported: dict[str, str]
    precision: dict[str, str]
    performance: dict[str, str]
    affinity_calls: dict[str, list[str]]
    affinity_patterns: dict[str, list[str]]
    module_operators: dict[str, list[str]]
    npu_names: frozenset[str]
    placement: dict[str, list[PlacementRule]] = field(default_factory=dict)

    def placement_rules(self, name: str) -> list[PlacementRule]:
        """The placement rules of every overload of ``aten::<name>``."""
        return self.placement.get(name, [])


def _load_placement(path: str) -> dict[str, list[PlacementRule]]:
    """The release table, by operator name without overload (format: data/placement/README.md)."""
    table: dict[str, list[PlacementRule]] = {}
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except OSError as error:
        raise SupportDataError(f"cannot read placement table {path}: {error.strerror}") from error
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 5 or "::" not in fields[0]:
            raise SupportDataError(f"{path}:{number}: expected 5 TAB-separated fields starting with a namespace::")
        # torch_npu's own operators (npu::) are not reached through torch APIs, which is what the
        # migration reports are about.
        if not fields[0].startswith("aten::"):
            continue
        operator = fields[0][len("aten::"):]
        name = operator.split(".", 1)[0]
        table.setdefault(name, []).append(PlacementRule(operator, fields[1], fields[2], fields[3] == "yes"))
    return table


@functools.lru_cache(maxsize=None)
def load(release_line: str = "2.13") -> SupportData:
    if release_line not in RELEASE_LINES:
        raise SupportDataError(
            f"no migration data for the torch_npu {release_line} line (available: {', '.join(RELEASE_LINES)})"
        )
    folder = os.path.join(DATA_DIRECTORY, "migration")
    rules = _load_json(os.path.join(folder, "migration_rules.json"))
    unsupported = _load_json(os.path.join(folder, f"unsupported_api-{release_line}.json")).get("apis", {})
    advice = _load_json(os.path.join(folder, f"precision_performance_advice-{release_line}.json"))
    affinity = _load_json(os.path.join(folder, f"affinity_apis-{release_line}.json"))
    npu_api = _load_json(os.path.join(folder, f"torch_npu_npu_api-{release_line}.json"))
    npu_names = frozenset(npu_api.get("names", [])) | frozenset(npu_api.get("submodules_and_attributes", []))
    placement = _load_placement(os.path.join(DATA_DIRECTORY, "placement", f"torch_npu-{release_line}.tsv"))
    return SupportData(
        release_line=release_line,
        rules=rules,
        unsupported=dict(unsupported),
        precision=dict(advice.get("precision", {})),
        performance=dict(advice.get("performance", {})),
        affinity_calls=dict(affinity.get("calls", {})),
        affinity_patterns=dict(affinity.get("function_patterns", {})),
        module_operators=dict(affinity.get("module_api_map", {})),
        npu_names=npu_names,
        placement=placement,
    )


# ---------------------------------------------------------------------------------------------
# Questions answered by the installed PyTorch


@functools.lru_cache(maxsize=None)
def _torch():
    import torch

    return torch


@functools.lru_cache(maxsize=4096)
def api_exists(qualified_name: str) -> bool:
    """Whether ``torch.x.y`` names an attribute of the installed PyTorch (modules imported as
    needed)."""
    parts = qualified_name.split(".")
    if parts[0] != "torch":
        return False
    obj: Any = _torch()
    for index, part in enumerate(parts[1:], start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[: index + 1]))
        except Exception:
            return False
    return True


def _has_kernel(overload_name: str, key: str) -> bool:
    try:
        return bool(_torch()._C._dispatch_has_kernel_for_dispatch_key(overload_name, key))
    except RuntimeError:
        return False


def _falls_back(overload_name: str) -> bool:
    """A device compute operator (it has a CPU kernel) without a composite kernel: on the real
    stack it needs an NPU kernel, else it reaches the CPU fallback. Operators without a CPU
    kernel (TorchScript's aten::save, aten::cuda) are not device work."""
    if not _has_kernel(overload_name, "CPU"):
        return False
    composite = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
    return not any(_has_kernel(overload_name, key) for key in composite)


@dataclass
class OperatorAdvice:
    placement: str  # "ai_cpu" or "cpu_fallback"
    operators: list[str]
    condition: str  # "-" when unconditional
    sync: bool


@functools.lru_cache(maxsize=4096)
def operator_advice(data_line: str, name: str) -> OperatorAdvice | None:
    """How the real stack runs ``aten::<name>``, when that costs time: on the AI CPU (always or
    under a dtype condition), or as a CPU fallback (no overload listed and some overload has no
    composite kernel). None for AI Core operators and names that are not aten operators."""
    data = load(data_line)
    torch = _torch()
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    if packet is None or not hasattr(packet, "overloads"):
        return None
    rules = data.placement_rules(name)
    if rules:
        ai_cpu = [rule for rule in rules if rule.placement == "ai_cpu"]
        if not ai_cpu:
            return None
        unconditional = [rule for rule in ai_cpu if rule.condition == "-"]
        chosen = unconditional or ai_cpu
        condition = "-" if unconditional else chosen[0].condition
        return OperatorAdvice(
            "ai_cpu", sorted({f"aten::{rule.operator}" for rule in chosen}), condition, any(r.sync for r in chosen)
        )
    missing = []
    for overload in packet.overloads():
        full = f"aten::{name}" + ("" if overload == "default" else f".{overload}")
        if _falls_back(full):
            missing.append(full)
    if not missing:
        return None
    return OperatorAdvice("cpu_fallback", missing, "-", True)
