"""ACLGraph update plans written by Inductor (torch_npu's
``torch_npu._inductor._aclgraph_update_plan.codegen``).

For each extern kernel of a compiled graph whose operator has an NPUGraph handler, the plan
entry maps each update key the handler declares to where its value comes from at run time: a
graph input (by position, also a symbolic size equal to one), a list of such sources, or a
literal constant. Tensors that are not graph inputs cannot be updated (their values are baked
into the compiled code).
"""

from __future__ import annotations

from typing import Any, Sequence

from npusim._error_code import ErrCode, pta_error
from npusim.compile.graph_updates import op_handlers_builtin  # noqa: F401  (the built-in handlers)
from npusim.compile.graph_updates.update_plan import ACLGRAPH_UPDATE_PLAN_GLOBAL, base_op_name
from npusim.compile.graph_updates.op_handlers import handler_for, update_specs_of

__all__ = [
    "append_inductor_aclgraph_update_plan_for_codegen_node",
    "build_aclgraph_update_plan_entry_for_inductor",
    "emit_inductor_aclgraph_update_plan_for_wrapper",
    "should_generate_inductor_aclgraph_update_plan",
]

# Operators whose update the runtime handler skips in some layouts: (operator, layout).
_NOT_UPDATED = {("npu_fusion_attention_v3", "BNSD"), ("npu_fusion_attention_grad_v3", "BNSD")}


def _excluded(op_name: str, bound: dict) -> bool:
    return (base_op_name(op_name), bound.get("input_layout")) in _NOT_UPDATED


def _constant_source(value: Any) -> dict:
    import torch

    if isinstance(value, torch.Tensor):
        raise RuntimeError("Unsupported ACLGraph update Tensor constant; Tensor update values must be graph inputs"
                           + pta_error(ErrCode.PARAM))
    if value is None:
        return {"kind": "none"}
    if isinstance(value, (int, float, bool, str)):
        return {"kind": "constant", "value": value}
    raise RuntimeError(f"Unsupported ACLGraph update source: {value!r}" + pta_error(ErrCode.PARAM))


def _symbolic(value: Any):
    import sympy
    import torch

    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.expr
    return None


def _buffer_name(value: Any) -> str | None:
    """The Inductor buffer name of ``value`` (through its data and views), or None."""
    import torch

    if isinstance(value, torch.Tensor):
        return None
    if hasattr(value, "get_name"):
        try:
            return value.get_name()
        except (AttributeError, NotImplementedError):
            pass
    data = getattr(value, "data", None)
    if data is not None and data is not value:
        name = _buffer_name(data)
        if name is not None:
            return name
    if hasattr(value, "unwrap_view"):
        try:
            return _buffer_name(value.unwrap_view())
        except (AttributeError, NotImplementedError):
            pass
    return None


def _same_expression(left, right) -> bool:
    import sympy

    try:
        return bool(sympy.simplify(left - right) == 0)
    except Exception:  # noqa: BLE001 - expressions sympy cannot subtract compare structurally
        return left == right


def _graph_input_position(value: Any, names: Sequence[str], inputs: dict) -> int | None:
    names = list(names)
    name = _buffer_name(value)
    if name in names:
        return names.index(name)
    expression = _symbolic(value)
    for position, input_name in enumerate(names):
        given = inputs.get(input_name)
        if value is given:
            return position
        given_expression = _symbolic(given)
        if expression is not None and given_expression is not None and _same_expression(expression, given_expression):
            return position
    return None


def _source_of(value: Any, names: Sequence[str], inputs: dict) -> dict:
    position = _graph_input_position(value, names, inputs)
    if position is not None:
        return {"kind": "input", "index": position}
    if isinstance(value, (list, tuple)):
        return {"kind": "list", "items": [_source_of(item, names, inputs) for item in value]}
    return _constant_source(value)


def _bind(target: Any, args: Sequence[Any], kwargs: dict) -> dict:
    """The call's arguments by schema name."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return {}
    args = list(args)
    bound = {}
    for position, argument in enumerate(schema.arguments):
        if position < len(args):
            bound[argument.name] = args[position]
        elif argument.name in kwargs:
            bound[argument.name] = kwargs[argument.name]
    return bound


def build_aclgraph_update_plan_entry_for_inductor(op_overload: Any, args: Sequence[Any], kwargs: dict,
                                                  graph_input_names: Sequence[str],
                                                  graph_inputs: dict) -> dict | None:
    """The plan entry of one extern kernel call, or None when nothing of it is updated."""
    op_name = getattr(op_overload, "__name__", str(op_overload))
    handler_cls = handler_for(op_name)
    if handler_cls is None:
        return None
    should_handle = getattr(handler_cls, "should_handle", None)
    if should_handle is not None and not should_handle(op_overload, args, kwargs):
        return None
    bound = _bind(op_overload, args, kwargs)
    if _excluded(op_name, bound):
        return None
    keys = {key for _, _, key in update_specs_of(handler_cls, op_name)}
    updates = {key: _source_of(value, graph_input_names, graph_inputs) for key, value in bound.items() if key in keys}
    return {"op": op_name, "updates": updates} if updates else None


def should_generate_inductor_aclgraph_update_plan() -> bool:
    """Whether the graph being compiled is captured by NPUGraph trees (and so needs a plan)."""
    from torch._inductor import config
    from torch._inductor.virtualized import V

    return bool(config.triton.cudagraphs and config.triton.cudagraph_trees
                and getattr(V.graph, "disable_cudagraphs_reason", None) is None)


def append_inductor_aclgraph_update_plan_for_codegen_node(wrapper: Any, node: Any) -> None:
    """Adds the plan entry of extern kernel ``node`` to ``wrapper``'s plan."""
    if not should_generate_inductor_aclgraph_update_plan():
        return
    op_overload = getattr(node, "op_overload", None)
    if op_overload is None:
        return
    if hasattr(node, "unflatten_args"):
        args, kwargs = node.unflatten_args(node.inputs, node.constant_args)
    else:
        args, kwargs = [*node.inputs, *node.constant_args], getattr(node, "kwargs", {})
    entry = build_aclgraph_update_plan_entry_for_inductor(
        op_overload, args, kwargs, wrapper.get_graph_input_names(), wrapper.get_graph_inputs())
    if entry is not None:
        if not hasattr(wrapper, "torch_npu_aclgraph_update_plan"):
            wrapper.torch_npu_aclgraph_update_plan = []
        wrapper.torch_npu_aclgraph_update_plan.append(entry)


def emit_inductor_aclgraph_update_plan_for_wrapper(wrapper: Any, result: Any, is_graph_partition_subgraph: bool) -> None:
    """Writes ``wrapper``'s plan into the generated module, on its call function."""
    from torch._inductor import config

    if not should_generate_inductor_aclgraph_update_plan():
        return
    plan = getattr(wrapper, "torch_npu_aclgraph_update_plan", [])
    if not plan or (config.graph_partition and not is_graph_partition_subgraph):
        return
    result.writeline(f"{wrapper.launcher_fn_name}.{ACLGRAPH_UPDATE_PLAN_GLOBAL} = {plan!r}")


