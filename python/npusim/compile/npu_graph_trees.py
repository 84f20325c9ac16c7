"""``torch.compile(mode="reduce-overhead")`` on npu: compiled graphs replayed from NPUGraphs.

``reduce-overhead`` turns on Inductor's CUDA graphs; Inductor then refuses every device but
CUDA ("skipping cudagraphs due to multiple devices") and its graph trees are CUDA-only. For
npu, npusim accepts a single-npu graph and wraps each compiled callable (forward, backward or
inference) through Inductor's ``cudagraph_policy`` hook with :func:`npu_graphify`: the first
call per input signature runs the compiled code as it is (warm-up), the second captures it
into a ``torch.npu.NPUGraph`` on static copies of its non-static inputs, and every later call
copies the new inputs into those and replays the graph: one graph launch instead of one host
dispatch per kernel. As with Inductor's own (non-tree) CUDA graphs, the outputs live in the
graph's memory and are overwritten by the next replay of the same graph.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import torch

# Since the last reset: graphs captured and replays run by reduce-overhead (for reports/tests).
stats = {"captured": 0, "replayed": 0, "warmups": 0}
_installed = False


def reset_stats() -> None:
    for key in stats:
        stats[key] = 0


def _is_npu(inputs: Sequence[Any]) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == "npu" for t in inputs)


def _signature(inputs: Sequence[Any], static: frozenset[int]) -> tuple:
    """One graph per input shapes (dynamic shapes give several) and per static input memory."""
    key = []
    for index, value in enumerate(inputs):
        if isinstance(value, torch.Tensor):
            key.append((tuple(value.shape), tuple(value.stride()), value.dtype,
                        value.data_ptr() if index in static else None))
        elif isinstance(value, (int, float, bool, torch.SymInt)):
            key.append(int(value) if isinstance(value, torch.SymInt) else value)
        else:
            key.append(type(value).__name__)
    return tuple(key)


class _Recorded:
    """One captured graph of a compiled callable, with its static inputs and outputs."""

    def __init__(self, model: Callable, inputs: list, static: frozenset[int], mutated: tuple[int, ...]):
        self.static = static
        self.copies = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and i not in static]
        self.mutated = [i for i in mutated if i in self.copies]
        self.inputs = list(inputs)
        for index in self.copies:
            source = inputs[index]
            copy = torch.empty_strided(source.size(), source.stride(), dtype=source.dtype, device=source.device)
            copy.copy_(source)
            self.inputs[index] = copy
        self.graph = torch.npu.NPUGraph()
        with torch.npu.graph(self.graph, capture_error_mode="thread_local"):
            self.outputs = model(list(self.inputs))
        stats["captured"] += 1

    def copy_back(self, inputs: list) -> None:
        # Inputs the compiled code mutates were mutated in their static copies.
        for index in self.mutated:
            if inputs[index].data_ptr() != self.inputs[index].data_ptr():
                inputs[index].copy_(self.inputs[index])

    def run(self, inputs: list) -> Any:
        for index in self.copies:
            source = inputs[index]
            if source.data_ptr() != self.inputs[index].data_ptr():
                self.inputs[index].copy_(source)
        self.graph.replay()
        stats["replayed"] += 1
        self.copy_back(inputs)
        inputs.clear()
        return self.outputs


def npu_graphify(model: Callable, static_input_idxs: Sequence[int] = (), mutated_input_idxs: Sequence[int] = ()):
    """Wrap a compiled callable (boxed: it takes a list of inputs) with NPUGraph capture and replay."""
    static = frozenset(static_input_idxs)
    mutated = tuple(mutated_input_idxs)
    local = threading.local()

    def run(new_inputs: list) -> Any:
        recorded: dict = getattr(local, "recorded", None)
        if recorded is None:
            recorded = local.recorded = {}
            local.warm = set()
        key = _signature(new_inputs, static)
        graph = recorded.get(key)
        if graph is not None:
            return graph.run(new_inputs)
        if key not in local.warm:
            local.warm.add(key)
            stats["warmups"] += 1
            return model(new_inputs)
        from torch._dynamo.utils import preserve_rng_state

        with preserve_rng_state():
            graph = _Recorded(model, new_inputs, static, mutated)
        recorded[key] = graph
        # The capture computed this call's results on copies of its inputs.
        graph.copy_back(new_inputs)
        new_inputs.clear()
        return graph.outputs

    return run


def _policy_class():
    from torch._inductor.cudagraph_utils import CUDAGraphPolicy

    class NpuGraphPolicy(CUDAGraphPolicy):
        """npu graphs through NPUGraph; every other device keeps Inductor's own policy."""

        def cudagraphify(self, model, example_inputs, static_input_idxs, *, device_index, is_backward,
                         is_inference, **kwargs):
            if _is_npu(example_inputs):
                return npu_graphify(model, static_input_idxs, kwargs.get("mutated_input_idxs", ()))
            return super().cudagraphify(model, example_inputs, static_input_idxs, device_index=device_index,
                                        is_backward=is_backward, is_inference=is_inference, **kwargs)

    return NpuGraphPolicy


def install() -> None:
    """Let Inductor's CUDA-graph path serve npu graphs; idempotent (Dynamo and Inductor
    registration both call it, since a cached compile skips code generation)."""
    global _installed
    if _installed:
        return
    from torch._inductor import config, cudagraph_utils, output_code

    original_check = cudagraph_utils.check_multiple_devices_or_any_cpu_nodes

    def check_devices(device_node_mapping):
        devices = [d for d in device_node_mapping if d.type not in ("meta",)]
        if len(devices) == 1 and devices[0].type == "npu":
            return None
        return original_check(device_node_mapping)

    cudagraph_utils.check_multiple_devices_or_any_cpu_nodes = check_devices

    # A backward that cannot be graphed tells the CUDA tree manager of its forward; npu has none.
    original_backward = output_code.maybe_handle_backward_generation

    def maybe_handle_backward_generation(compiled_graph, boxed_forward_device_index):
        if "npu" in getattr(compiled_graph, "device_types", ()):
            return None
        return original_backward(compiled_graph, boxed_forward_device_index)

    output_code.maybe_handle_backward_generation = maybe_handle_backward_generation
    if config.cudagraph_policy is None:
        config.cudagraph_policy = _policy_class()()
    _installed = True
