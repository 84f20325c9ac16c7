"""``torch.compile(mode="reduce-overhead")`` on npu: Inductor's CUDA-graph path serving npu, and
the per-graph NPUGraph path (no trees).

``reduce-overhead`` turns on Inductor's CUDA graphs; Inductor then refuses every device but
CUDA ("skipping cudagraphs due to multiple devices") and its graph trees are CUDA-only.
:func:`install` lets a single-npu graph through and wraps each compiled callable (forward,
backward or inference) through Inductor's ``cudagraph_policy`` hook: with
``torch._inductor.config.triton.cudagraph_trees`` (the default) into torch_npu's NPU graph trees
(npusim.compile.graph_tree, ``torch_npu.npu._graph_tree``), else with :func:`npu_graphify`,
torch_npu's path without the trees, which the ``npugraph_ex`` backend uses too.

:func:`npu_graphify`: the first call per input signature runs the compiled code as it is
(warm-up), the second captures it into a ``torch.npu.NPUGraph`` on static copies of its
non-static inputs, in a private pool, and every later call copies the new inputs into those and
replays the graph: one graph launch instead of one host dispatch per kernel. Every graph run
hands out fresh tensors over the graph's memory, on storages of their own
(torch.ops.npusim._graph_output_aliases, csrc/compile/GraphOutputAliases.cpp). Runs belong to
generations as in the trees (a call of a compiled function begins one unless forwards still
wait for their backward; any call after ``torch.compiler.npugraph_mark_step_begin()`` does); a
replay over outputs of an earlier generation that the program still holds invalidates them
first (torch_npu's "Error: accessing tensor output of NPUGraphs that has been overwritten by a
subsequent run. ..."), and within one generation a graph never overwrites outputs still in use:
the compiled code runs without the graph, with torch_npu's fast-path warning.
"""

from __future__ import annotations

import bisect
import threading
import warnings
from typing import Any, Callable, Sequence

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from npusim.compile import graph_pool
from npusim.compile.graph_run_stats import reset_stats, stats  # noqa: F401  (the report's)
from npusim.compile.graph_steps import MarkStepBox

_installed = False

FORWARD, BACKWARD, INFERENCE = "forward", "backward", "inference"


def overwritten_message(stack_trace: str | None) -> str:
    """torch_npu's text (NPUGraphTreeManager.format_dealloc_msg)."""
    stack_trace = stack_trace.strip() if stack_trace else "[Could not find stack trace]"
    return (
        "Error: accessing tensor output of NPUGraphs that has been overwritten by a subsequent run. "
        f"Stack trace: {stack_trace}. "
        "To prevent overwriting, clone the tensor outside of torch.compile() "
        "or call torch.compiler.npugraph_mark_step_begin() before each model invocation."
    )


_FAST_PATH_WARNING = (
    "Unable to hit fast path of NPUGraphs because of pending, uninvoked backwards. "
    "Consider running with torch.no_grad() or using torch.compiler.npugraph_mark_step_begin() "
    "before each model invocation."
)


def _invalidate(storage_ref: StorageWeakRef, message: str) -> None:
    from npusim.compile import _native

    if not storage_ref.expired():
        _native.invalidate_storage(storage_ref.cdata, message)


class _HandedOut:
    """The storages of the outputs one graph run handed to the program (weakly held), and the
    generation it ran in."""

    __slots__ = ("refs", "ranges", "messages", "invalid", "generation")

    def __init__(self, outputs: Sequence[Any], skip: set[int], stack_traces: Sequence[str | None] | None,
                 generation: int):
        self.refs: list[StorageWeakRef] = []
        self.ranges: list[tuple[int, int]] = []  # (address, end) of each storage
        self.messages: list[str | None] = []
        self.invalid = False
        self.generation = generation
        seen: set[int] = set()
        for index, output in enumerate(outputs):
            if not isinstance(output, torch.Tensor) or output.device.type != "npu":
                continue
            storage = output.untyped_storage()
            key = storage.data_ptr()
            if key in skip or key in seen or storage.nbytes() == 0:
                continue
            seen.add(key)
            self.refs.append(StorageWeakRef(storage))
            self.ranges.append((key, key + storage.nbytes()))
            self.messages.append(stack_traces[index] if stack_traces and index < len(stack_traces) else None)

    def alive(self) -> bool:
        return not self.invalid and any(not ref.expired() for ref in self.refs)

    def overlaps(self, written: "_WrittenMemory") -> bool:
        """Whether a storage the program still holds lies in ``written``."""
        return any(not ref.expired() and written.overlaps(start, end)
                   for ref, (start, end) in zip(self.refs, self.ranges))

    def invalidate(self) -> None:
        if self.invalid:
            return
        self.invalid = True
        for ref, stack_trace in zip(self.refs, self.messages):
            _invalidate(ref, overwritten_message(stack_trace))


class _WrittenMemory:
    """The device memory a graph's replay writes: storages as address ranges, sorted."""

    __slots__ = ("starts", "reach")

    def __init__(self, storages: Sequence[tuple[int, int]]):
        ordered = sorted(storages)
        self.starts = [address for address, _ in ordered]
        # reach[i]: the highest end among the first i + 1 ranges (storages may nest or overlap).
        self.reach: list[int] = []
        for address, size in ordered:
            self.reach.append(max(address + size, self.reach[-1] if self.reach else 0))

    def overlaps(self, start: int, end: int) -> bool:
        index = bisect.bisect_left(self.starts, end) - 1
        return index >= 0 and self.reach[index] > start


class _DeviceGenerations:
    """One device's generations of reduce-overhead runs (CUDA graph trees' rules: a call of a
    compiled function begins a new generation unless forwards still wait for their backward,
    or whenever the program marked a step)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: int | None = None  # Dynamo's (or the marked) generation of the last call
        self.generation = 0  # npusim's count of generations begun
        self.pending_backward = False
        self.warned: set[int] = set()
        self.pool: tuple[int, int] | None = None
        self.handed: list[_HandedOut] = []  # graph outputs the program may still hold

    def capture_pool(self) -> tuple[int, int] | None:
        """The pool the device's graphs share (None: each graph its own, without the trees)."""
        from torch._inductor import config

        if not config.triton.cudagraph_trees:
            return None
        with self.lock:
            if self.pool is None:
                self.pool = graph_pool.new_pool_handle()
            return self.pool

    def hand_out(self, handed: _HandedOut) -> None:
        with self.lock:
            self.handed = [h for h in self.handed if h.alive()]
            if handed.refs:
                self.handed.append(handed)

    def outputs_in(self, written: _WrittenMemory) -> list[_HandedOut]:
        """The runs whose outputs, still held by the program, lie in ``written``."""
        with self.lock:
            self.handed = [h for h in self.handed if h.alive()]
            return [h for h in self.handed if h.overlaps(written)]

    @staticmethod
    def current_generation() -> int:
        if MarkStepBox.mark_step_counter != 0:
            return MarkStepBox.mark_step_counter
        from torch._dynamo.mutation_guard import GenerationTracker

        return GenerationTracker.generation

    def begin_run(self) -> int:
        """The generation this call runs in (a new one if it may begin one)."""
        seen = self.current_generation()
        with self.lock:
            if seen != self.seen:
                # Forwards that wait for their backward keep the generation going through this
                # invocation (and the backward that follows it), unless the program marked a step.
                if not self.pending_backward or MarkStepBox.mark_step_counter != 0:
                    self.generation += 1
                    self.pending_backward = False
                self.seen = seen
            return self.generation

    def ran(self, mode: str) -> None:
        with self.lock:
            if mode == FORWARD:
                self.pending_backward = True
            elif mode == BACKWARD:
                self.pending_backward = False

    def warn_once(self, function: int) -> None:
        if function not in self.warned:
            self.warned.add(function)
            warnings.warn(_FAST_PATH_WARNING, stacklevel=3)


_devices: dict[int, _DeviceGenerations] = {}
_devices_lock = threading.Lock()


def _generations(device_index: int) -> _DeviceGenerations:
    with _devices_lock:
        state = _devices.get(device_index)
        if state is None:
            state = _devices[device_index] = _DeviceGenerations()
        return state


def reset_generations() -> None:
    """Forget every device's generation and handed-out outputs (between tests)."""
    from npusim.compile import graph_tree

    with _devices_lock:
        _devices.clear()
    graph_tree.reset_npugraph_trees()
    MarkStepBox.mark_step_counter = 0


def ran_without_graph(device_index: int, mode: str) -> None:
    """A compiled function of ``device_index`` ran without a graph (a backward that could not
    be captured): its generation bookkeeping moves on as if a graph had run."""
    _generations(device_index).ran(mode)


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


def _input_storages(inputs: Sequence[Any]) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}


def _output_list(outputs: Any) -> list:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


class _Recorded:
    """One captured graph of a compiled callable, with its static inputs and outputs."""

    def __init__(self, model: Callable, inputs: list, static: frozenset[int], mutated: tuple[int, ...],
                 pool: tuple[int, int] | None):
        self.static = static
        self.copies = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and i not in static]
        self.mutated = [i for i in mutated if i in self.copies]
        # Static inputs handed out by another graph's run (a backward's saved activations) are
        # captured over that graph's static memory, which no later generation invalidates.
        self.inputs = [torch.ops.npusim._graph_output_source(x) if i in static and isinstance(x, torch.Tensor) else x
                       for i, x in enumerate(inputs)]
        for index in self.copies:
            source = inputs[index]
            copy = torch.empty_strided(source.size(), source.stride(), dtype=source.dtype, device=source.device)
            copy.copy_(source)
            self.inputs[index] = copy
        self.graph = torch.npu.NPUGraph()
        with torch.npu.graph(self.graph, pool=pool, capture_error_mode="thread_local"):
            self.outputs = model(list(self.inputs))
        stats["captured"] += 1
        # Outputs that are (views of) the graph's inputs are returned as they are; the others
        # live in the graph's memory and are handed out as fresh tensors on every run.
        input_storages = _input_storages(self.inputs)
        listed = _output_list(self.outputs)
        self.aliased = [i for i, t in enumerate(listed)
                        if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in input_storages]
        self.static_outputs = [listed[i] for i in self.aliased]
        self.input_storages = input_storages
        # What a replay writes: the pool memory of its kernels but its inputs (temporaries, outputs).
        self.written = _WrittenMemory([(address, size) for address, size in self.graph._pool_storages
                                       if address not in input_storages])

    def hand_out(self) -> list:
        """This run's outputs: fresh tensors over the static memory."""
        outputs = _output_list(self.outputs)
        if self.aliased:
            fresh = torch.ops.npusim._graph_output_aliases(self.static_outputs)
            for index, tensor in zip(self.aliased, fresh):
                outputs[index] = tensor
        return outputs

    def copy_back(self, inputs: list) -> None:
        # Inputs the compiled code mutates were mutated in their static copies.
        for index in self.mutated:
            if inputs[index].data_ptr() != self.inputs[index].data_ptr():
                inputs[index].copy_(self.inputs[index])

    def replay(self, inputs: list) -> None:
        for index in self.copies:
            source = inputs[index]
            if source.data_ptr() != self.inputs[index].data_ptr():
                self.inputs[index].copy_(source)
        self.graph.replay()
        stats["replayed"] += 1
        self.copy_back(inputs)


def npu_graphify(model: Callable, static_input_idxs: Sequence[int] = (), mutated_input_idxs: Sequence[int] = (),
                 *, device_index: int = 0, mode: str = INFERENCE, stack_traces: Sequence[str | None] | None = None):
    """Wrap a compiled callable (boxed: it takes a list of inputs) with NPUGraph capture and replay."""
    from npusim.compile import _native

    _native.load()  # torch.ops.npusim._graph_output_aliases lives in the compile library
    static = frozenset(static_input_idxs)
    mutated = tuple(mutated_input_idxs)
    local = threading.local()
    generations = _generations(device_index)
    function = id(local)

    def run_without_graph(new_inputs: list) -> Any:
        # Fresh memory from the caching allocator: nothing will overwrite these outputs.
        outputs = model(new_inputs)
        generations.ran(mode)
        return outputs

    def run(new_inputs: list) -> Any:
        recorded: dict = getattr(local, "recorded", None)
        if recorded is None:
            recorded = local.recorded = {}
            local.warm = set()
        generation = generations.begin_run()
        key = _signature(new_inputs, static)
        graph = recorded.get(key)
        if graph is None and key not in local.warm:
            local.warm.add(key)
            stats["warmups"] += 1
            return run_without_graph(new_inputs)
        if graph is not None:
            # Outputs the program still holds (of this graph or, through the shared pool, of
            # another) that the replay would overwrite.
            held = generations.outputs_in(graph.written)
            if any(run.generation == generation for run in held):
                # In use in this generation (a forward's saved activations before their
                # backward): the replay would overwrite them.
                generations.warn_once(function)
                stats["eager"] += 1
                return run_without_graph(new_inputs)
            # Kept from an earlier generation: reading one now raises torch_npu's error instead
            # of showing this run's values.
            for run_outputs in held:
                run_outputs.invalidate()
        if graph is None:
            from torch._dynamo.utils import preserve_rng_state

            with preserve_rng_state():
                graph = _Recorded(model, new_inputs, static, mutated, generations.capture_pool())
            recorded[key] = graph
            # The capture computed this call's results on copies of its inputs.
            graph.copy_back(new_inputs)
        else:
            graph.replay(new_inputs)
        new_inputs.clear()
        outputs = graph.hand_out()
        generations.hand_out(_HandedOut(outputs, graph.input_storages, stack_traces, generation))
        generations.ran(mode)
        return outputs

    return run


def _policy_class():
    from torch._inductor.cudagraph_utils import CUDAGraphPolicy

    class NpuGraphPolicy(CUDAGraphPolicy):
        """npu graphs through NPUGraph; every other device keeps Inductor's own policy."""

        def cudagraphify(self, model, example_inputs, static_input_idxs, *, device_index, is_backward,
                         is_inference, **kwargs):
            if _is_npu(example_inputs):
                from torch._inductor import config

                if config.triton.cudagraph_trees:
                    # torch_npu's NPU graph trees (torch_npu.npu._graph_tree).
                    from npusim.compile import graph_tree

                    return graph_tree.tree_npugraphify(model, static_input_idxs, device_index=device_index,
                                                       is_backward=is_backward, is_inference=is_inference, **kwargs)
                mode = BACKWARD if is_backward else INFERENCE if is_inference else FORWARD
                return npu_graphify(model, static_input_idxs, kwargs.get("mutated_input_idxs", ()),
                                    device_index=device_index, mode=mode, stack_traces=kwargs.get("stack_traces"))
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
            if not (compiled_graph.fx_kwargs["is_backward"] and config.triton.cudagraph_trees):
                return None
            # A backward that runs without a graph still ends its forward's wait (the next
            # call may begin a generation), as Inductor tells the CUDA tree manager.
            from npusim.compile import graph_tree

            callable_ = compiled_graph.current_callable
            device_index = boxed_forward_device_index.value if boxed_forward_device_index is not None else None

            def compiled_artifact(new_inputs):
                manager = None if device_index is None else graph_tree.get_manager(device_index, False)
                if manager is not None:
                    manager.set_to_running_backward()
                return callable_(new_inputs)

            compiled_graph.current_callable = compiled_artifact
            return None
        return original_backward(compiled_graph, boxed_forward_device_index)

    output_code.maybe_handle_backward_generation = maybe_handle_backward_generation
    if config.cudagraph_policy is None:
        config.cudagraph_policy = _policy_class()()
    _installed = True
