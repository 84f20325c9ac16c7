"""The Dynamo backend named ``"npugraphs"``: ``torch.compile(model, backend="npugraphs")``.

torch_npu registers it (entry point ``npugraphs`` of ``torch_dynamo_backends``,
``torch_npu.utils._graph_tree.NpugraphsBackend``) as PyTorch registers ``"cudagraphs"``: no
code generation; AOTAutograd splits the traced graph into a forward and a backward, each is
run as it is (an FX interpreter over the npu kernels) and captured into an NPUGraph on its
second call, then replayed: one graph launch per step instead of one host dispatch per
kernel. A graph that cannot be captured (inputs on the CPU or on several devices, a mutated
input that is not a parameter or buffer, an operator a graph cannot hold) runs without the
graph, with the reason in the cudagraph skip log, as torch_npu does.

The captured graphs are those of ``mode="reduce-overhead"``: torch_npu's NPU graph trees
(npusim.compile.graph_tree, served as ``torch_npu.npu._graph_tree``), with their generations and
torch_npu's error when a program reads an output a later generation overwrote. The backend takes
no options (``torch.compile(..., backend="npugraphs", options=...)`` fails as in torch_npu).
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Sequence

import torch

__all__ = ["BACKEND_NAME", "NpugraphsBackend", "npugraphs", "npugraphs_backend", "register"]

BACKEND_NAME = "npugraphs"

log = logging.getLogger(__name__)


def _device_mapping(graph_module: torch.fx.GraphModule) -> dict:
    from torch._dynamo.backends.cudagraphs import get_device_node_mapping

    mapping = get_device_node_mapping(graph_module)
    mapping.pop(torch.device("meta"), None)
    return mapping


def _device_skip(graph_module: torch.fx.GraphModule) -> str | None:
    """Why a graph with these devices cannot be an NPUGraph (torch_npu's reasons), or None."""
    from torch._inductor.cudagraph_utils import _get_use_stack_trace, format_default_skip_message

    mapping = _device_mapping(graph_module)
    cpu_node = mapping.get(torch.device("cpu"))
    if cpu_node is not None:
        message = f"cpu device ({cpu_node.name})"
        stack_trace = _get_use_stack_trace(cpu_node)
        if stack_trace:
            return format_default_skip_message(f"{message}. Found from : \n {stack_trace}")
        return format_default_skip_message(message)
    if len(mapping) == 1 and next(iter(mapping)).type == "npu":
        return None
    return format_default_skip_message(f"multiple devices: {', '.join(repr(key) for key in mapping)}")


def check_for_skip(graph_module: torch.fx.GraphModule, num_fixed: int) -> str | None:
    """The reason this AOT graph runs without an NPUGraph, or None."""
    from torch._dynamo.backends.cudagraphs import check_for_mutation_ignore_cuda_graph_managed_tensor
    from torch._inductor.cudagraph_utils import format_default_skip_message
    from torch._inductor.utils import get_first_incompatible_cudagraph_node

    if not torch._dynamo.config.cudagraph_backend_support_input_mutation:
        mutation = check_for_mutation_ignore_cuda_graph_managed_tensor(graph_module, num_fixed)
        if mutation:
            return mutation
    device = _device_skip(graph_module)
    if device:
        return device
    node = get_first_incompatible_cudagraph_node(graph_module)
    if node is not None:
        return format_default_skip_message(f"incompatible op ({node.name})")
    return None


def device_index(graph_module: torch.fx.GraphModule) -> int:
    device = next(iter(_device_mapping(graph_module)))
    return device.index if device.index is not None else torch.npu.current_device()


def npugraphs(dynamo_model: torch.fx.GraphModule, dynamo_inputs: Sequence[Any]) -> Any:
    """AOTAutograd with forward, backward and inference graphs captured into NPUGraphs."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.cudagraphs import find_input_mutations, get_stack_traces
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter
    from torch._inductor.utils import BoxedBool, count_tangents, num_fw_fixed_arguments

    from torch._inductor.cudagraph_utils import get_placeholder_info

    from npusim.compile import graph_tree

    graphing = BoxedBool(True)
    forward_device: list[int] = [0]

    def graphify(aot_model, aot_inputs, fixed: int, *, is_backward: bool, is_inference: bool):
        # torch_npu's NPU graph trees (torch_npu.npu._graph_tree), as PyTorch's "cudagraphs"
        # backend uses CUDA's.
        compiled = graph_tree.npugraphify_impl(
            boxed_nop(aot_model, aot_inputs), aot_inputs, range(fixed), device_index=device_index(aot_model),
            is_backward=is_backward, is_inference=is_inference, stack_traces=get_stack_traces(aot_model),
            placeholders=get_placeholder_info(aot_model.graph),
            mutated_input_idxs=find_input_mutations(aot_model.graph))
        compiled._boxed_call = True
        return compiled

    def forward_npugraphs(aot_model, aot_inputs, is_inference: bool = False):
        fixed = num_fw_fixed_arguments(len(dynamo_inputs), len(aot_inputs))
        skip = check_for_skip(aot_model, fixed)
        if skip:
            BoxedBool.disable(graphing)
            log_cudagraph_skip_and_bump_counter(f"skipping npugraphs due to {skip}")
            return boxed_nop(aot_model, aot_inputs)
        forward_device[0] = device_index(aot_model)
        return graphify(aot_model, aot_inputs, fixed, is_backward=False, is_inference=is_inference)

    def backward_npugraphs(aot_model, aot_inputs):
        if not graphing:
            return aot_model
        fixed = count_tangents(aot_model)
        skip = check_for_skip(aot_model, fixed)
        if skip:
            log_cudagraph_skip_and_bump_counter(f"skipping npugraphs due to {skip}")
            manager = graph_tree.get_manager(forward_device[0], create_if_none_exists=False)
            if manager is None:
                raise RuntimeError("check manager is None fail")

            def run_backward(inputs):
                # The forward's outputs wait for no backward any more (the next call of the
                # compiled function may begin a new generation).
                manager.set_to_running_backward()
                return aot_model(inputs)

            run_backward._boxed_call = True
            return run_backward
        return graphify(aot_model, aot_inputs, fixed, is_backward=True, is_inference=False)

    aot_npugraphs = aot_autograd(
        fw_compiler=forward_npugraphs,
        bw_compiler=backward_npugraphs,
        inference_compiler=functools.partial(forward_npugraphs, is_inference=True),
        keep_inference_input_mutations=torch._dynamo.config.cudagraph_backend_keep_input_mutation,
    )
    return aot_npugraphs(dynamo_model, dynamo_inputs)


class NpugraphsBackend:
    """The registered callable (torch_npu's ``NpugraphsBackend``): a graph module and example
    inputs in, a compiled callable out; ``reset`` is called by ``torch.compiler.reset()``."""

    compiler_name = BACKEND_NAME

    @staticmethod
    def reset() -> None:
        from npusim.compile import graph_tree

        graph_tree.reset_npugraph_trees()

    def __call__(self, model: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
        # No **kwargs: options are refused ("unexpected keyword argument 'options'").
        return npugraphs(model, inputs)


npugraphs_backend = NpugraphsBackend()


def register() -> None:
    """Register ``"npugraphs"`` with Dynamo's backend registry; idempotent."""
    from npusim.compile.dynamo_backend import register_named

    register_named(BACKEND_NAME, npugraphs_backend)
