"""ACLGraph update plans (torch_npu's ``torch_npu.npu._aclgraph_update_plan``).

Compiled code that an NPUGraph captures with automatic dispatch capture carries a plan: one
entry per updatable operator, ``{"op": name, "updates": {key: source}}``, where a source says
where an update key's value comes from at each call of the compiled function:
``{"kind": "input", "index": i}`` (the call's i-th input), ``{"kind": "constant", "value": v}``,
``{"kind": "none"}`` or ``{"kind": "list", "items": [source, ...]}``. Before a replay the plan is
checked against the graph's records and resolved into the graph's ``cpu_update_input``.
"""

from __future__ import annotations

from typing import Any, Sequence

from npusim._error_code import ErrCode, pta_error
from npusim.compile.graph_updates.op_handlers import handler_for, update_specs_of

__all__ = [
    "ACLGRAPH_UPDATE_PLAN_GLOBAL",
    "build_cpu_update_input_for_graph",
    "resolve_aclgraph_update_plan",
    "update_aclgraph_records_for_graph",
    "validate_aclgraph_update_plan",
    "validate_aclgraph_update_plan_for_graph",
]

# The attribute of a compiled module's call function that holds its plan.
ACLGRAPH_UPDATE_PLAN_GLOBAL = "_torch_npu_aclgraph_update_plan"

_SOURCE_KINDS = ("input", "constant", "none", "list")


def _plan_error(message: str) -> RuntimeError:
    return RuntimeError(message + pta_error(ErrCode.PARAM))


def base_op_name(op_name: str) -> str:
    """``op_name`` without its ``.default`` / ``.out`` overload (the two forms update alike)."""
    for overload in (".default", ".out"):
        if op_name.endswith(overload):
            return op_name[: -len(overload)]
    return op_name


def _same_operator(planned: str, captured: str) -> bool:
    return planned == captured or base_op_name(planned) == base_op_name(captured)


def _keys_the_record_takes(record: Any) -> set:
    """The update keys a captured call can consume: its keyword arguments and its handler's specs."""
    op_name = record.op_cache_entry.__name__
    keys = set(getattr(record, "kwargs", {}) or {})
    handler_cls = handler_for(op_name)
    if handler_cls is not None:
        keys.update(key for _, _, key in update_specs_of(handler_cls, op_name))
    return keys


def resolve_aclgraph_update_plan(plan: Sequence[dict], new_inputs: Sequence[Any]) -> list[dict]:
    """The ``cpu_update_input`` of ``plan`` for a call with inputs ``new_inputs``."""
    return [
        {key: _resolve(index, key, source, new_inputs) for key, source in entry.get("updates", {}).items()}
        for index, entry in enumerate(plan or [])
    ]


def _resolve(entry: int, key: str, source: Any, new_inputs: Sequence[Any]) -> Any:
    where = f"ACLGraph update plan entry {entry} key {key}"
    if not isinstance(source, dict):
        raise _plan_error(f"{where} has invalid source {source!r}")
    kind = source.get("kind")
    if kind == "input":
        index = source.get("index")
        if not isinstance(index, int) or not 0 <= index < len(new_inputs):
            raise _plan_error(f"{where} input index {index} is out of range for {len(new_inputs)} inputs")
        return new_inputs[index]
    if kind == "constant":
        return source.get("value")
    if kind == "none":
        return None
    if kind == "list":
        items = source.get("items")
        if not isinstance(items, list):
            raise _plan_error(f"{where} has invalid list source items {items!r}")
        return [_resolve(entry, key, item, new_inputs) for item in items]
    raise _plan_error(f"{where} has unsupported source kind {kind!r}")


def validate_aclgraph_update_plan(plan: Sequence[dict], graph_dispatch_records: Sequence[Any]) -> None:
    """Checks that ``plan`` fits the graph's recorded calls, entry by entry."""
    plan = plan or []
    if not plan and graph_dispatch_records:
        ops = [record.op_cache_entry.__name__ for record in graph_dispatch_records]
        raise _plan_error(
            f"Captured updatable ACLGraph operators but missing ACLGraph update plan: {ops}. This may be caused "
            "by reusing cached compiled code generated with ACLGraph disabled or by using the npugraphs backend, "
            "which does not support ACLGraph update plans yet."
        )
    if len(plan) != len(graph_dispatch_records):
        raise _plan_error(
            f"ACLGraph update plan length mismatch: plan has {len(plan)} entries but graph captured "
            f"{len(graph_dispatch_records)} updatable records"
        )
    for index, (entry, record) in enumerate(zip(plan, graph_dispatch_records)):
        if not isinstance(entry, dict):
            raise _plan_error(f"ACLGraph update plan has invalid plan entry at index {index}: {entry!r}")
        planned = entry.get("op")
        captured = record.op_cache_entry.__name__
        if not isinstance(planned, str):
            raise _plan_error(
                f"ACLGraph update plan has invalid plan entry: entry {index} op must be a string, got {planned!r}"
            )
        if not _same_operator(planned, captured):
            raise _plan_error(f"ACLGraph update plan op mismatch: entry {index} expects {planned!r}, "
                              f"captured {captured!r}")
        updates = entry.get("updates", {})
        if not isinstance(updates, dict):
            raise _plan_error(
                f"ACLGraph update plan has invalid plan entry: entry {index} updates must be a dict, got {updates!r}"
            )
        if not updates:
            raise _plan_error(f"ACLGraph update plan entry has no updates: entry {index}, op {captured!r}")
        unknown = sorted(set(updates) - _keys_the_record_takes(record))
        if unknown:
            raise _plan_error(
                "ACLGraph update plan has key(s) that captured op cannot consume: "
                f"entry {index}, op {captured!r}, keys {unknown}"
            )
        for key, source in updates.items():
            _check_source(index, key, source)


def _check_constant(value: Any) -> None:
    import torch

    if isinstance(value, torch.Tensor):
        raise _plan_error("Unsupported ACLGraph update Tensor constant; Tensor update values must be graph inputs")
    if value is None or isinstance(value, (int, float, bool, str)):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_constant(item)
        return
    raise _plan_error(f"Unsupported ACLGraph update constant: {value!r}")


def _check_source(entry: int, key: str, source: Any) -> None:
    where = f"ACLGraph update plan entry {entry} key {key}"
    if not isinstance(source, dict):
        raise _plan_error(f"{where} has invalid source {source!r}")
    kind = source.get("kind")
    if kind == "input":
        index = source.get("index")
        if not isinstance(index, int) or index < 0:
            raise _plan_error(f"{where} has invalid input index {index}")
    elif kind == "constant":
        try:
            _check_constant(source.get("value"))
        except RuntimeError as error:
            raise _plan_error(f"{where} has unsupported constant value {source.get('value')!r}") from error
    elif kind == "list":
        items = source.get("items")
        if not isinstance(items, list):
            raise _plan_error(f"{where} has invalid list source items {items!r}")
        for item in items:
            _check_source(entry, key, item)
    elif kind != "none":
        raise _plan_error(f"{where} has unsupported source kind {kind!r}")


def build_cpu_update_input_for_graph(plan: Sequence[dict], new_inputs: Sequence[Any],
                                     graph_dispatch_records: Sequence[Any]) -> list[dict]:
    """Checks ``plan`` against the records, then resolves it for ``new_inputs``."""
    validate_aclgraph_update_plan(plan, graph_dispatch_records)
    return resolve_aclgraph_update_plan(plan, new_inputs)


def validate_aclgraph_update_plan_for_graph(plan: Sequence[dict], graph: Any) -> None:
    """Checks ``plan`` against ``graph``'s records (graphs without automatic dispatch capture pass)."""
    if graph is None or not graph.auto_dispatch_capture:
        return
    validate_aclgraph_update_plan(plan, graph.graph_dispatch_mode.graph_dispatch_records)


def update_aclgraph_records_for_graph(cpu_update_input: Sequence[dict], graph: Any) -> bool:
    """Updates ``graph`` with ``cpu_update_input``; whether there was anything to update."""
    if graph is None or not graph.auto_dispatch_capture or not cpu_update_input:
        return False
    graph.update(cpu_update_input)
    return True
