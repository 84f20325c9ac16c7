"""NPU graph trees: ``torch.compile(mode="reduce-overhead")``'s NPUGraphs, as torch_npu's
``torch_npu.npu._graph_tree`` (its port of Inductor's CUDA graph trees) structures them.

Every compiled function (forward, backward, inference) of a device is added to that device's
:class:`NPUGraphTreeManager`. A call runs, in order of preference:

- *execution*: the replay of an :class:`NPUGraphNode` recorded for this function as a child of
  the node that ran last (or as a root), when its invariants hold (the inputs that are outputs
  of earlier graphs are where they were, the earlier outputs that had died at recording are
  dead again);
- *warm-up* (:class:`NPUWarmupNode`): the compiled code as it is, the first time a function
  runs (and after any warm-up in the same path), allocating in the graphs' shared pool;
- *recording*: a new NPUGraphNode, captured into the shared pool.

Nodes form trees: a node's parent is the graph that ran before it in the same generation
(torch.compile invocation, or step between ``torch.compiler.npugraph_mark_step_begin()``
calls), whose outputs may still be live. A new generation ends the current path; the outputs
of a recording or warm-up path that the program still holds are then invalidated: reading one
raises "Error: accessing tensor output of NPUGraphs that has been overwritten by a subsequent
run. ..." (the memory goes back to the pool, for the graphs that will run).

Memory, on npusim's caching allocator: all graphs of a device capture into one private pool
(``graph_pool_handle``), so a graph recorded later reuses the temporaries of the graphs
recorded before it. A node keeps the memory of its inputs and outputs allocated for as long as
it exists (the storages it recorded into), where torch_npu lets outputs that die return to the
pool and restores the allocator's book-keeping from a checkpoint (``_npu_setCheckpointPoolState``)
before recording after a replay. Here the allocator's state after a replay is already right for
a new recording: no memory a replay writes but temporaries is ever free in the pool. The
program receives outputs on storages of their own over the node's memory
(``torch.ops.npusim._graph_output_aliases``), so that one run's outputs can be invalidated
without touching the node's.

Names, signatures, error texts and state machine follow torch_npu (read for facts only); the
device-generic helpers (``WrappedFunction``, ``FunctionID``, invariant statuses, input
alignment) are PyTorch Inductor's own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import itertools
import operator
import sys
import threading
import traceback
import warnings
import weakref
from collections import defaultdict
from enum import Enum, auto
from typing import Any, Callable, ContextManager, Generator, Iterator, Optional, Sequence, Union

import torch
from torch import Tensor
from torch._dynamo.mutation_guard import GenerationTracker
from torch._dynamo.utils import counters, preserve_rng_state
from torch._inductor import config
from torch._inductor.compile_fx import (
    align_inputs_from_check_idxs,
    copy_misaligned_inputs,
    get_expanded_dims,
    get_input_idxs_to_check,
    index_expanded_dims,
    remove_unaligned_input_idxs,
    static_input,
)
from torch._inductor.cudagraph_utils import (
    CheckInvariantStatus,
    FunctionID,
    ModelType,
    OutputType,
    PlaceholderInfo,
    WrappedFunction,
    check_for_mutation,
    log_cudagraph_skip_and_bump_counter,
    log_data_ptr_mismatch,
    maybe_warning_due_to_dynamic_shape,
)
from torch.multiprocessing.reductions import StorageWeakRef
from torch.storage import UntypedStorage
from torch.utils import _pytree as pytree
from torch.utils._ordered_set import OrderedSet
from torch.utils.weak import TensorWeakRef

from npusim.compile import graph_tree_bindings
from npusim.compile.graph_run_stats import stats
from npusim.compile.graph_steps import MarkStepBox

InputType = Union[Tensor, int, torch.SymInt, None]
StorageWeakRefPointer = int
StorageDataPtr = int
NBytes = int
# (depth of the node in its path, index of the output): one output of a path.
PathOutputIndex = tuple[int, int]
# For each node of a path, for each output: whether it is live.
PathLiveness = list[list[bool]]
StackTraces = list[Optional[str]]

# Where the trees look up their runtime bindings at each call: npusim's, or torch_npu._C once
# npusim's torch_npu face is loaded (it points this at itself, so that what a program does to
# torch_npu._C, as torch_npu's tests patch it, is what the trees call).
_C: Any = graph_tree_bindings

log = torch._logging.getArtifactLogger("torch._inductor.cudagraph_trees", "cudagraphs")

__all__ = [
    "GraphID", "clear_cublass_cache", "clear_cublas_manager", "disable_conv_cache_emptying",
    "enable_history_recording", "get_history_recording", "TreeManagerContainer", "local",
    "reset_npugraph_trees", "get_obj", "get_container", "get_manager", "npugraphify_impl", "npugraphify",
    "StorageWeakRefWrapper", "is_live", "maybe_deref", "map_to_ref", "NPUWarmupNode", "OutputAliasInfo",
    "UnaliasedStorage", "AliasesPriorGraphOutput", "AliasesNewOutput", "NPUGraphNode", "get_npugraph_segments",
    "get_block_addrs", "format_tb", "check_memory_pool", "ExecutionState", "CompilationMode",
    "NPUGraphTreeManager", "MarkStepBox", "FunctionID", "WrappedFunction",
]


@dataclasses.dataclass(frozen=True)
class GraphID:
    "Unique counter of an NPU graph recording"

    id: int


def clear_cublass_cache() -> None:
    """Where CUDA's trees drop cuBLAS's persistent workspace around warm-up and recording (so
    that it is not allocated in the graphs' pool from one run to the next). The NPU matmul
    operators keep no workspace across calls, so there is nothing to drop; the hook stays for
    the callers torch_npu has."""


@contextlib.contextmanager
def clear_cublas_manager() -> Generator[None, None, None]:
    "Clears the matmul workspace caches on entering and on leaving"
    clear_cublass_cache()
    try:
        yield
    finally:
        clear_cublass_cache()


@contextlib.contextmanager
def disable_conv_cache_emptying() -> Generator[None, None, None]:
    """CUDA's trees keep cuDNN from emptying its convolution cache during a capture; the NPU
    convolution operators have no such cache."""
    yield


@contextlib.contextmanager
def enable_history_recording() -> Generator[None, None, None]:
    "Turns on history recording in the NPU caching allocator for the block"
    enabled = _C._npu_isHistoryEnabled()
    try:
        if not enabled:
            torch.npu.memory._record_memory_history()
        yield
    finally:
        if not enabled:
            torch.npu.memory._record_memory_history(None)


def get_history_recording() -> ContextManager[None]:
    if not config.triton.cudagraph_trees_history_recording:
        return contextlib.nullcontext()
    return enable_history_recording()


class TreeManagerContainer:
    """Keeps one device's tree manager alive while a function compiled for its graphs lives
    (each registers with :meth:`add_strong_reference`); when the last one dies the manager
    goes, and with it the graphs and their pool."""

    def __init__(self, device_index: int) -> None:
        self.tree_manager: Optional[NPUGraphTreeManager] = None
        self.live_npugraphify_fns = 0
        self.device_index = device_index
        # Set when graph outputs outlive the functions: the graph keeps the pool alive.
        self.live_storages_count = 0
        self.graph: Optional[torch.npu.NPUGraph] = None
        self.lock = threading.Lock()

    def _finalize_tensor(self) -> None:
        with self.lock:
            self.live_storages_count -= 1
            if self.live_storages_count == 0:
                self.graph = None
                # The manager may have been used again after the functions died.
                if self.live_npugraphify_fns == 0:
                    self.tree_manager = None

    def finalize_npugraphify_fn(self) -> None:
        with self.lock:
            self.live_npugraphify_fns -= 1
            if self.live_npugraphify_fns == 0:
                self._finalize_tree_manager()

    def _finalize_tree_manager(self) -> None:
        if not self.lock.locked():
            raise RuntimeError("check self.lock.locked() fail")
        self.tree_manager = None

    def add_strong_reference(self, fn: Callable[..., Any]) -> None:
        with self.lock:
            self.live_npugraphify_fns += 1
        weakref.finalize(fn, self.finalize_npugraphify_fn)

    def get_tree_manager(self) -> NPUGraphTreeManager:
        with self.lock:
            if self.tree_manager is None:
                self.tree_manager = NPUGraphTreeManager(self.device_index)
            return self.tree_manager


# One container per device, per thread; autograd's device threads see the creating thread's
# (the objects are stashed in the TLS that PyTorch copies into the threads it starts). The keys
# are torch_npu's, apart from the CUDA trees' own.
local = threading.local()
local.npu_tree_manager_containers = {}
local.npu_tree_manager_locks = defaultdict(threading.Lock)
torch._C._stash_obj_in_tls("npu_tree_manager_containers", local.npu_tree_manager_containers)
torch._C._stash_obj_in_tls("npu_tree_manager_locks", local.npu_tree_manager_locks)


def reset_npugraph_trees() -> None:
    "Clear all NPU graph trees"
    container_dict = get_obj(local, "npu_tree_manager_containers")
    locks_dict = get_obj(local, "npu_tree_manager_locks")
    for device, lock in locks_dict.items():
        with lock:
            container = container_dict.get(device)
            if not container or not container.tree_manager:
                continue
            container.tree_manager.shutdown()
    _C._set_cached_tensors_enabled(False)
    container_dict.clear()
    MarkStepBox.mark_step_counter = 0


def get_obj(thread_local: Any, attr_name: str) -> Any:
    if hasattr(thread_local, attr_name):
        return getattr(thread_local, attr_name)
    if not torch._C._is_key_in_tls(attr_name):
        raise RuntimeError("check torch._C._is_key_in_tls(attr_name) fail")
    return torch._C._get_obj_in_tls(attr_name)


def get_container(device_index: int) -> TreeManagerContainer:
    container_dict = get_obj(local, "npu_tree_manager_containers")
    lock = get_obj(local, "npu_tree_manager_locks")[device_index]
    with lock:
        if device_index not in container_dict:
            container_dict[device_index] = TreeManagerContainer(device_index)
        return container_dict[device_index]


def get_manager(device_index: int, create_if_none_exists: bool = True) -> Optional[NPUGraphTreeManager]:
    if create_if_none_exists:
        return get_container(device_index).get_tree_manager()
    return get_container(device_index).tree_manager


def npugraphify_impl(model: ModelType, inputs: list[InputType], static_input_idxs: Sequence[int], *args: Any,
                     **kwargs: Any) -> ModelType:
    """Graphs of ``model`` per value of its int inputs (dynamic shapes specialised per call)."""
    fn_cache: dict[Any, Callable[..., Any]] = {}
    int_key = [i for i, v in enumerate(inputs) if isinstance(v, int)]
    get_ints: Any = operator.itemgetter(*int_key) if int_key else lambda _: None
    has_warn = False
    del inputs

    def deferred_npugraphify(inputs: list[InputType]) -> OutputType:
        nonlocal has_warn
        key = get_ints(inputs)
        fn = fn_cache.get(key)
        if fn is not None:
            return fn(inputs)
        log.debug("NPUGRAPH-TREE Compile recording, key=%s", key)
        if not has_warn:
            has_warn = maybe_warning_due_to_dynamic_shape(fn_cache, key)
        # Inputs whose alignment the compiled code assumed are copied when misaligned; those
        # stop being static.
        check_input_idxs = get_input_idxs_to_check(inputs, static_input_idxs)
        new_static_input_idxs = remove_unaligned_input_idxs(inputs, static_input_idxs)
        copy_misaligned_inputs(inputs, check_input_idxs)
        fn, out = npugraphify(model, inputs, new_static_input_idxs, *args, **kwargs)
        fn = align_inputs_from_check_idxs(fn, inputs_to_check=check_input_idxs, mutated_input_idxs=OrderedSet())
        fn_cache[key] = fn
        return out

    return deferred_npugraphify


def npugraphify(model: ModelType, inputs: list[InputType], static_input_idxs: Sequence[int] = (), *,
                device_index: int, is_backward: bool, is_inference: bool,
                stack_traces: Optional[StackTraces] = None, constants: tuple[Tensor, ...] = (),
                placeholders: tuple[PlaceholderInfo, ...] = (),
                mutated_input_idxs: tuple[int, ...] = ()) -> tuple[ModelType, OutputType]:
    """Add ``model`` to the device's tree; returns the function that runs it and the outputs
    of this first call."""
    manager = get_container(device_index).get_tree_manager()
    if is_backward and is_inference:
        raise RuntimeError("check is_backward and is_inference fail")
    mode = (CompilationMode.BACKWARD if is_backward
            else CompilationMode.INFERENCE if is_inference else CompilationMode.FORWARD)
    return manager.add_function(model, inputs, static_input_idxs, stack_traces, mode, constants, placeholders,
                                mutated_input_idxs)


def tree_npugraphify(model: ModelType, static_input_idxs: Sequence[int] = (), **kwargs: Any) -> ModelType:
    """Inductor's wrapping of a compiled callable for graph trees (reduce-overhead): the
    function joins the device's tree on its first call, per thread, with that call's inputs.
    ``kwargs`` are :func:`npugraphify`'s (device_index, is_backward, is_inference, ...)."""
    thread_local = threading.local()

    def run(new_inputs: list[InputType]) -> Any:
        compiled_fn = getattr(thread_local, "compiled_fn", None)
        if compiled_fn is None:
            with preserve_rng_state():
                compiled_fn = npugraphify_impl(model, new_inputs, static_input_idxs, **kwargs)
            thread_local.compiled_fn = compiled_fn
        return compiled_fn(new_inputs)

    return run


class StorageWeakRefWrapper:
    """A weak reference to a storage that remembers its data pointer (also once it died).

    ``extra_ref_check`` marks a storage that the tree itself references through a cached
    tensor: the storage is expired when only the tree's references remain, and while the check
    says the cached tensor is referenced elsewhere it is not."""

    __slots__ = ["ref", "_data_ptr", "extra_ref_check", "_tree_refs"]

    def __init__(self, inp: Union[Tensor, UntypedStorage], extra_ref_check: Optional[Callable[[], bool]] = None) -> None:
        if isinstance(inp, Tensor):
            stor = inp.untyped_storage()
        else:
            if not isinstance(inp, UntypedStorage):
                raise RuntimeError("check isinstance(inp, UntypedStorage) fail")
            stor = inp
        self.ref = StorageWeakRef(stor)
        self._data_ptr = stor.data_ptr()
        self.extra_ref_check = extra_ref_check
        # The storage's references that belong to the tree (its cached tensor), taken now:
        # the wrapper is made right after the cached tensor, which nothing else holds yet.
        self._tree_refs = torch._C._storage_Use_Count(self.ref.cdata) if extra_ref_check is not None else 0

    @classmethod
    def from_weakref_and_data_ptr(cls, cdata: Any, data_ptr: int,
                                  extra_ref_check: Optional[Callable[[], bool]] = None) -> StorageWeakRefWrapper:
        instance = cls.__new__(cls)
        instance._data_ptr = data_ptr
        instance.ref = StorageWeakRef.from_weakref(cdata)
        instance.extra_ref_check = extra_ref_check
        instance._tree_refs = 0
        return instance

    def __call__(self) -> Optional[StorageWeakRefPointer]:
        if self.expired():
            return None
        return self.ref.cdata

    def swap_weakref(self, cdata: Any) -> None:
        self.ref.__del__()
        self.ref.cdata = cdata

    def data_ptr(self) -> int:
        "NB: returns the data ptr even if the storage has expired"
        return self._data_ptr

    def remove_extra_reference(self) -> None:
        self.extra_ref_check = None
        self._tree_refs = 0

    def expired(self) -> bool:
        if self.extra_ref_check is not None and not self.extra_ref_check():
            return False
        stor_count = torch._C._storage_Use_Count(self.ref.cdata)
        if self.extra_ref_check is not None:
            stor_count -= self._tree_refs
        if stor_count < 0:
            raise RuntimeError("check stor_count >= 0 fail")
        return stor_count == 0

    def __repr__(self) -> str:
        if self.ref is None or self.ref.expired():
            return f"StorageWeakRefWrapper to {self.data_ptr()}; dead"
        return f"StorageWeakRefWrapper to {self.data_ptr()}; alive"


def is_live(weak_ref: Optional[StorageWeakRefWrapper]) -> bool:
    return maybe_deref(weak_ref) is not None


def maybe_deref(weak_ref: Optional[StorageWeakRefWrapper]) -> Optional[tuple[StorageWeakRefPointer, int]]:
    if weak_ref is None:
        return None
    r = weak_ref()
    if r is None:
        return None
    # NB: the storage's data_ptr() need not equal weak_ref.data_ptr() (an invalidated one).
    return r, weak_ref.data_ptr()


@contextlib.contextmanager
def _use_npu_memory_pool_manager(device: int, mem_pool: tuple[int, int],
                                 stream: torch.npu.Stream) -> Generator[None, None, None]:
    """New allocations of this thread go to the graphs' pool ``mem_pool`` on ``stream``. Every
    graph-tree tensor in use must be reflected in the allocator, or it will be overwritten."""
    torch.npu.synchronize()
    stream.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(stream), torch.device(device):
        _C._npu_beginAllocateCurrentThreadToPool(device, mem_pool)
        try:
            yield
        finally:
            _C._npu_endAllocateToPool(device, mem_pool)
            _C._npu_releasePool(device, mem_pool)
    torch.npu.current_stream().wait_stream(stream)


# The pool memory each recorded node keeps allocated (its input copies and output memory), by
# pool and node: with the live outputs of the current path, what the pool's allocated blocks
# must be (check_memory_pool). An entry goes with its node.
_nodes_pool_memory: dict[tuple[int, tuple[int, int]], dict[int, list[StorageWeakRefWrapper]]] = defaultdict(dict)


def _hold_pool_memory(node: NPUGraphNode, storages: list[UntypedStorage]) -> None:
    key = (node.device, tuple(node.npu_graphs_pool))
    _nodes_pool_memory[key][id(node)] = [StorageWeakRefWrapper(storage) for storage in storages]
    weakref.finalize(node, _nodes_pool_memory[key].pop, id(node), None)


def pool_live_weakrefs(device: int, pool: tuple[int, int],
                       path_refs: Sequence[StorageWeakRefWrapper]) -> list[StorageWeakRefWrapper]:
    """The storages that must be exactly the allocated blocks of ``pool``: the live outputs of
    the current path and the memory every recorded node of the pool keeps."""
    held = [ref for refs in _nodes_pool_memory.get((device, tuple(pool)), {}).values() for ref in refs]
    return list(path_refs) + held


def map_to_ref(t: Optional[Tensor]) -> Optional[StorageWeakRefWrapper]:
    if not isinstance(t, torch.Tensor):
        if t is not None:
            raise RuntimeError("check t is None fail")
        return None
    return StorageWeakRefWrapper(t)


class NPUWarmupNode:
    """One warm-up run of a compiled function: the code as it is, allocating in the graphs'
    pool, with weak references to its outputs (for the liveness of the path). A warm-up node's
    parent may be a graph node or a warm-up node; its children are warm-up nodes only (nothing
    can be recorded over memory whose addresses are not stable yet)."""

    def __init__(self, wrapped_function: WrappedFunction, parent: Optional[Union[NPUGraphNode, NPUWarmupNode]],
                 npu_graphs_pool: tuple[int, int], existing_npu_graph: Optional[torch.npu.NPUGraph],
                 device_index: int, stack_traces: Optional[StackTraces], stream: torch.npu.Stream,
                 already_warm: bool, graph_id: GraphID) -> None:
        self.wrapped_function = wrapped_function
        self.parent: Optional[Union[NPUGraphNode, NPUWarmupNode]] = parent
        self.npu_graphs_pool = npu_graphs_pool
        self.outputs_weakrefs: list[Optional[StorageWeakRefWrapper]] = []
        self.tensor_weakrefs: list[Optional[TensorWeakRef]] = []
        self.existing_npu_graph = existing_npu_graph
        self.has_run = False
        self.device_index = device_index
        self.stack_traces = stack_traces
        self.stream = stream
        self.already_warm = already_warm
        self.id = graph_id

    def run(self, new_inputs: Any) -> OutputType:
        if self.has_run:
            raise RuntimeError("Wrapped function should never be run twice")
        # Only storages this run creates belong to the path (not its inputs, which may be
        # outputs of the path already, nor parameters).
        existing_path_data_ptrs = {t.data_ptr() for t in self.path_live_weakrefs() if t()}

        def get_non_npugraph_inps() -> list[weakref.ReferenceType[UntypedStorage]]:
            return [weakref.ref(t.untyped_storage())
                    for t in itertools.chain(new_inputs, self.wrapped_function.constants)
                    if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in existing_path_data_ptrs]

        non_npugraph_inps_storages = get_non_npugraph_inps()
        if config.triton.slow_path_cudagraph_asserts and not self.already_warm:
            check_memory_pool(self.device_index, self.npu_graphs_pool,
                              pool_live_weakrefs(self.device_index, self.npu_graphs_pool, list(self.path_live_weakrefs())))

        with torch.npu.device(self.device_index), disable_conv_cache_emptying(), clear_cublas_manager(), \
                _use_npu_memory_pool_manager(self.device_index, self.npu_graphs_pool, self.stream), \
                get_history_recording():
            out = self.wrapped_function.model(new_inputs)
        self.has_run = True

        # A weak reference to the inputs' storages: a block of the general pool may be
        # reallocated to the private one.
        non_npugraph_inps_storage_ptrs = set()
        for storage in non_npugraph_inps_storages:
            s = storage()
            if s is not None:
                non_npugraph_inps_storage_ptrs.add(s._cdata)
        if len(new_inputs) != 0:
            raise RuntimeError("check len(new_inputs) == 0 fail")

        def add_ref(o: Any) -> bool:
            # Outputs on the host (sdpa's, out of a capture) do not belong to the pool.
            return (isinstance(o, torch.Tensor) and o.is_npu
                    and o.untyped_storage()._cdata not in non_npugraph_inps_storage_ptrs
                    and o.untyped_storage().data_ptr() != 0)

        self.outputs_weakrefs.extend([map_to_ref(o) if add_ref(o) else None for o in out])
        self.tensor_weakrefs.extend([TensorWeakRef(o) if add_ref(o) else None for o in out])
        if config.triton.slow_path_cudagraph_asserts and not self.already_warm:
            check_memory_pool(self.device_index, self.npu_graphs_pool,
                              pool_live_weakrefs(self.device_index, self.npu_graphs_pool, list(self.path_live_weakrefs())))
        return out

    @property
    def _path_from_root(self) -> Generator[Union[NPUGraphNode, NPUWarmupNode], None, None]:
        nodes = []
        node: Optional[Union[NPUGraphNode, NPUWarmupNode]] = self
        while node:
            nodes.append(node)
            node = node.parent
        yield from reversed(nodes)

    def path_live_weakrefs(self) -> Iterator[StorageWeakRefWrapper]:
        "Returns all live storages weakrefs that created by nodes in this path"
        for node in self._path_from_root:
            for output in node.outputs_weakrefs:
                if is_live(output):
                    yield output

    def all_outputs_are_dead(self) -> bool:
        return not list(self.path_live_weakrefs())

    def _is_npu_graph_recorded_tensor(self, t: torch.Tensor) -> bool:
        return any(t.untyped_storage().data_ptr() == ref.data_ptr() for ref in self.path_live_weakrefs())


# What the indices of a list denote.
InputList = list  # input indexes
OutputList = list  # output indexes
LevelList = list  # levels (distance from root of tree)


class OutputAliasInfo:
    pass


class _UnaliasedStorage(OutputAliasInfo):
    "Singleton to mark that the graph output constructs a new alias or is None"


UnaliasedStorage = _UnaliasedStorage()


class AliasesPriorGraphOutput(OutputAliasInfo):
    "Marks that the graph output aliases an output of a prior graph"

    __slots__ = ["index"]
    index: PathOutputIndex

    def __init__(self, index: PathOutputIndex) -> None:
        if not isinstance(index, tuple):
            raise RuntimeError("check isinstance(index, tuple) fail")
        self.index = index


class AliasesNewOutput(OutputAliasInfo):
    "Marks that the graph output aliases an index in the new, returned outputs"

    __slots__ = ["index"]
    index: int

    def __init__(self, index: int) -> None:
        if not isinstance(index, int):
            raise RuntimeError("check isinstance(index, int) fail")
        self.index = index


class NPUGraphNode:
    """One recording of a function into an NPUGraph, in the pool the tree shares, as a child of
    the node whose outputs may be live when it runs (its parent) or as a root.

    The node keeps the memory of its recording inputs (the copies that later inputs are copied
    into) and of its new outputs allocated while it exists; the program receives its outputs
    on storages of their own over that memory. The function must have been warmed up."""

    def __init__(self, wrapped_function: WrappedFunction, graph_id: GraphID, parent: Optional[NPUGraphNode],
                 inputs: list[Tensor], npu_graphs_pool: tuple[int, int], device_index: int,
                 stack_traces: Optional[StackTraces], stream: torch.npu.Stream) -> None:
        if not isinstance(inputs, (list, tuple)):
            raise RuntimeError("check isinstance(inputs, (list, tuple))")
        self.wrapped_function = wrapped_function
        self.id = graph_id
        self.device = device_index
        self.stack_traces = stack_traces
        self.stream = stream
        # Re-record when a static input moved (instead of failing) when parameters are inlined
        # as inputs or inputs may be mutated.
        self.rerecord_if_static_inputs_change = (torch._dynamo.config.inline_inbuilt_nn_modules
                                                 or config.triton.cudagraph_support_input_mutation)
        # A weak reference: no cycle between parent and children.
        self._parent = weakref.ref(parent) if parent is not None else None
        self.npu_graphs_pool = npu_graphs_pool
        # A function may be recorded several times under one parent (other liveness, other
        # static input addresses).
        self.children: dict[FunctionID, list[NPUGraphNode]] = defaultdict(list)

        # One list per node, shared by its descendants' path_weakrefs: only cleared, never
        # reassigned.
        self.outputs_weakrefs: OutputList[Optional[StorageWeakRefWrapper]] = []
        self.path_weakrefs: LevelList[OutputList[Optional[StorageWeakRefWrapper]]] = [
            node.outputs_weakrefs for node in self._path_from_root]
        self.path_stacktraces: LevelList[Optional[StackTraces]] = [node.stack_traces for node in self._path_from_root]
        self.tensor_weakrefs: OutputList[Optional[TensorWeakRef]] = []

        # Inputs that are outputs of earlier graphs of the path.
        self.npugraph_managed_idxs: list[int] = [
            idx for idx, t in enumerate(inputs) if isinstance(t, torch.Tensor) and self._is_npu_graph_recorded_tensor(t)]
        # (depth, offset) of the live path output each input aliases.
        self.live_npugraph_managed_path_refs: InputList[Optional[PathOutputIndex]] = [
            self._is_alias_of_live_recorded_tensor(t) if isinstance(t, torch.Tensor) else None for t in inputs]
        # Inputs that alias a prior output which this node's outputs alias too stay live on replay.
        self.preserved_aliased_inputs: InputList[bool] = [False] * len(inputs)
        self.static_input_idxs: list[int] = list(set(wrapped_function.static_input_idxs) | set(self.npugraph_managed_idxs))
        self.non_static_input_idx: LevelList[int] = [i for i in range(len(inputs)) if i not in self.static_input_idxs]
        counters["inductor"]["npugraph_recorded_non_static_inputs"] += len(self.non_static_input_idx)
        self.non_managed_static_input_idxs: LevelList[int] = [
            i for i in wrapped_function.static_input_idxs if i not in self.npugraph_managed_idxs]
        self.static_input_data_ptrs: InputList[Optional[int]] = [
            inputs[i].data_ptr() if isinstance(inputs[i], torch.Tensor) and i in self.static_input_idxs else None
            for i in range(len(inputs))]
        # Dimensions expanded by stride 0 are copied once (precomputed off the hot path).
        self.expanded_dims: list[list[int]] = [
            get_expanded_dims(x) if isinstance(x, torch.Tensor) and idx not in self.static_input_idxs else []
            for idx, x in enumerate(inputs)]

        # Liveness of the path's outputs before and after the recording, the outputs that
        # died in between, and the live ones after it.
        self.recorded_liveness_before_graph: LevelList[OutputList[bool]] = []
        self.recorded_liveness_after_graph: LevelList[OutputList[bool]] = []
        self.expected_dead_indices_before_graph: list[PathOutputIndex] = []
        self.expected_dead_indices_after_graph: list[PathOutputIndex] = []
        self.live_indices_after_graph: list[PathOutputIndex] = []
        if self.parent is not None:
            previous_liveness = self.parent.recorded_liveness_after_graph
            curr_liveness = self._get_liveness(self.path_weakrefs)
            self.recorded_liveness_before_graph = curr_liveness
            self.expected_dead_indices_before_graph = self._get_different_indices(previous_liveness, curr_liveness)

        recording_inputs = self._allocate_and_copy_recording_inputs(inputs)
        # The recording copies hold the values now: the caller's inputs may go.
        inputs.clear()
        del inputs

        self.graph: Optional[torch.npu.NPUGraph] = torch.npu.NPUGraph()
        # Later inputs are copied into these (the node keeps their pool memory).
        self.reconstructed_inputs: list[InputType] = list(recording_inputs)

        # The pool's state after the recording (see the module's docstring for its use).
        self.checkpointed_caching_state: Optional[Any] = None
        # For each output: a new storage (or None), an alias of a prior graph's output, or of
        # an earlier output of this one; None for ints and static outputs.
        self.output_storage_alias: OutputList[Optional[OutputAliasInfo]] = []
        # Outputs no later output (on any path) aliases: handed out as one cached tensor.
        self.unaliased_in_all_paths: OutputList[bool] = []
        self.cached_tensor_outputs: OutputList[Optional[Tensor]] = []
        # Outputs that alias a static, persistent input (a parameter): always live.
        self.static_output_tensors: OutputList[Optional[Tensor]] = []
        # The storages the recording allocated its new outputs in, by data pointer: the
        # node's memory, which every handed-out output is a view of.
        self.output_memory: dict[int, UntypedStorage] = {}

        # Handed to the program by run_first_inputs, then dropped.
        self.recording_outputs: Optional[OutputType] = self._record(wrapped_function.model, recording_inputs)
        self.outputs_metadata: OutputList[Union[dict[str, Any], int, None]] = []
        if self.recording_outputs is None:
            raise RuntimeError("check self.recording_outputs is not None fail")
        for out in self.recording_outputs:
            if isinstance(out, torch.Tensor):
                self.outputs_metadata.append(self._tensor_metadata(out, ignore_storage_offset=False))
            else:
                if not isinstance(out, (int, type(None))):
                    raise RuntimeError("check isinstance(out, (int, type(None))) fail")
                self.outputs_metadata.append(out)
        # npusim's capture runs the kernels as it records them: the recording outputs hold
        # this call's results already (torch_npu replays once here, its capture runs nothing).

    def _copy_inputs_and_remove_from_src(self, dsts: list[InputType], srcs: list[InputType]) -> None:
        dst_tensors, src_tensors = [], []
        for idx in self.non_static_input_idx:
            if not isinstance(srcs[idx], torch.Tensor):
                continue
            expanded_dims = self.expanded_dims[idx]
            dst_tensors.append(index_expanded_dims(dsts[idx], expanded_dims))
            src_tensors.append(index_expanded_dims(srcs[idx], expanded_dims))
            srcs[idx] = None
        if dst_tensors:  # one batched copy
            torch._foreach_copy_(dst_tensors, src_tensors)

    def check_static_inputs_are_stable(self, new_inputs: list[InputType]) -> None:
        # Managed inputs were checked by check_invariants already.
        if not self.rerecord_if_static_inputs_change and not _C._tensors_data_ptrs_at_indices_equal(
                new_inputs, self.static_input_data_ptrs, self.non_managed_static_input_idxs):
            error_msg = log_data_ptr_mismatch(self.wrapped_function.placeholders, new_inputs,
                                              self.static_input_data_ptrs, self.non_managed_static_input_idxs,
                                              CheckInvariantStatus.StaticInputIdxMismatch)
            torch._check(False, lambda: error_msg)

    def run_first_inputs(self, new_inputs: list[InputType]) -> OutputType:
        if config.triton.fast_path_cudagraph_asserts:
            self.debug_check_invariants_before_invocation()
        # The recording ran this call; its inputs were copied and cleared.
        if len(new_inputs) != 0:
            raise RuntimeError("check len(new_inputs) == 0 fail")
        outputs = self.recording_outputs
        self.recording_outputs = None
        if outputs is None:
            raise RuntimeError("check outputs is not None fail")
        return outputs

    def run(self, new_inputs: list[InputType]) -> OutputType:
        log.debug("NPUGRAPH-TREE Node Run node=%s", self.id)
        self.check_static_inputs_are_stable(new_inputs)
        self._copy_inputs_and_remove_from_src(self.reconstructed_inputs, new_inputs)
        self.run_graph()
        outputs = self.reconstruct_outputs()
        new_inputs.clear()
        if config.triton.fast_path_cudagraph_asserts:
            self.debug_check_invariants_after_invocation()
        if config.triton.force_cudagraph_sync:
            torch.npu.synchronize()
        self.static_inputs_stable = False
        return outputs

    def reconstruct_outputs(self) -> OutputType:
        "Reconstruct output tensors according to their saved metadata and alias information"
        # Cached tensors are made on the first replay, and again after they were removed.
        if not self.cached_tensor_outputs:
            self._initialize_cached_tensors()
        outputs: OutputType = []
        for i, (storage_info, metadata) in enumerate(zip(self.output_storage_alias, self.outputs_metadata)):
            if not isinstance(metadata, dict):
                if not isinstance(metadata, (int, type(None))):
                    raise RuntimeError("check isinstance(metadata, (int, type(None))) fail")
                outputs.append(metadata)
                continue
            cached_t = self.cached_tensor_outputs[i]
            if cached_t is not None:
                # The same tensor every run; autograd resets its metadata, not its hooks.
                if cached_t._backward_hooks is not None:
                    cached_t._backward_hooks = None
                outputs.append(cached_t)
                continue
            static_t = self.static_output_tensors[i]
            if static_t is not None:
                if self.outputs_weakrefs[i] is not None:
                    raise RuntimeError("check self.outputs_weakrefs[i] is None fail")
                outputs.append(static_t)
                continue
            storage = self.prepare_alias_info_for_tensor_construction(storage_info, metadata)
            if isinstance(storage, UntypedStorage) or storage is None:
                out = self._reconstruct_from_tensor_metadata(metadata, storage)
            else:
                if not isinstance(storage, int):
                    raise RuntimeError("check isinstance(storage, int) fail")
                out = self._reconstruct_from_tensor_metadata(metadata, outputs[storage].untyped_storage())
            outputs.append(out)
            w = self.outputs_weakrefs[i]
            if w is None:
                raise RuntimeError("check w is not None fail")
            w.swap_weakref(out.untyped_storage()._weak_ref())
        return outputs

    def prepare_alias_info_for_tensor_construction(
            self, out_alias_info: Optional[OutputAliasInfo],
            metadata: Union[dict[str, Any], int, None]) -> Union[UntypedStorage, None, int]:
        if isinstance(metadata, (int, type(None))) or out_alias_info is UnaliasedStorage:
            return None
        if isinstance(out_alias_info, AliasesPriorGraphOutput):
            depth, existing_output_index = out_alias_info.index
            ref = self.path_weakrefs[depth][existing_output_index]
            if ref is None:
                raise RuntimeError("check ref is not None fail")
            return torch.UntypedStorage._new_with_weak_ptr(ref())
        if not isinstance(out_alias_info, AliasesNewOutput):
            raise RuntimeError("check isinstance(out_alias_info, AliasesNewOutput) fail")
        return out_alias_info.index

    def prepare_storages_for_construction(self) -> list[Union[UntypedStorage, None, int]]:
        return [self.prepare_alias_info_for_tensor_construction(alias, metadata)
                for alias, metadata in zip(self.output_storage_alias, self.outputs_metadata)]

    def run_graph(self) -> None:
        if self.graph is None:
            raise RuntimeError("check self.graph is not None fail")
        self.graph.replay()

    def all_outputs_are_dead(self) -> bool:
        "All outputs of the path from this node to its root are dead"
        return not any(is_live(self.path_weakrefs[depth][index]) for depth, index in self.live_indices_after_graph)

    def _record(self, model: ModelType, inputs: list[InputType]) -> OutputType:
        "Record the model"

        def static_input_iter() -> Generator[torch.Tensor, None, None]:
            for i in self.wrapped_function.static_input_idxs:
                inp = inputs[i]
                if isinstance(inp, torch.Tensor) and not self._is_npu_graph_recorded_tensor(inp) \
                        and inp.device.type != "cpu":
                    yield inp

        # Outputs that alias these (parameters, constants) are static outputs.
        static_input_persistent_storage_ptrs: dict[int, StorageWeakRefWrapper] = {
            inp.untyped_storage().data_ptr(): StorageWeakRefWrapper(inp)
            for inp in itertools.chain(static_input_iter(), self.wrapped_function.constants)}

        if config.triton.slow_path_cudagraph_asserts:
            # The parent's live outputs (live_indices is not set yet) and this node's inputs.
            memory = [] if self.parent is None else list(self.parent.path_live_weakrefs())
            memory += [StorageWeakRefWrapper(elem) for i, elem in enumerate(inputs)
                       if isinstance(elem, torch.Tensor) and i not in self.wrapped_function.static_input_idxs
                       and elem.untyped_storage().data_ptr() != 0 and elem.device.type != "cpu"]
            check_memory_pool(self.device, self.npu_graphs_pool, pool_live_weakrefs(self.device, self.npu_graphs_pool, memory))

        with preserve_rng_state(), torch.npu.device(self.device), clear_cublas_manager(), \
                torch.npu.graph(self.graph, stream=self.stream, pool=self.npu_graphs_pool,
                                capture_error_mode="thread_local"), get_history_recording():
            static_outputs = model(inputs)

        # The model consumed its inputs (their memory may be reclaimed).
        if len(inputs) != 0:
            raise RuntimeError("check len(inputs) == 0 fail")
        if not isinstance(static_outputs, (list, tuple)):
            static_outputs = (static_outputs,)
        handed_out = self._take_output_memory(static_outputs, static_input_persistent_storage_ptrs)
        self._add_first_outputs(handed_out, static_input_persistent_storage_ptrs)
        log.debug("NPUGRAPH-TREE Node Record node=%s recorded: outputs=%d, non_static_inputs=%d, "
                  "static_input_idxs=%d", self.id, len(static_outputs), len(self.non_static_input_idx),
                  len(self.static_input_idxs))
        return handed_out

    def _take_output_memory(self, outputs: Sequence[Any],
                            static_input_persistent_storage_ptrs: dict[int, StorageWeakRefWrapper]) -> OutputType:
        """Keep the storages the recording allocated its outputs in, and return the outputs the
        program receives: those outputs on storages of their own over the same memory (tensors
        that shared a storage share one). Outputs over memory the node does not own (static
        inputs, parameters, earlier graphs' outputs) are returned as they are."""
        from npusim.compile import _native

        new_memory = []
        for index, out in enumerate(outputs):
            if not isinstance(out, torch.Tensor) or not out.is_npu:
                continue
            storage = out.untyped_storage()
            pointer = storage.data_ptr()
            ref = static_input_persistent_storage_ptrs.get(pointer)
            # An output over an input copy (an input saved for the backward) is the node's
            # memory too: the program's liveness of it must not count the node's own reference.
            if pointer == 0 or (ref is not None and ref() is not None) or \
                    self._is_alias_of_live_recorded_tensor(out) is not None:
                continue
            self.output_memory[pointer] = storage
            new_memory.append(index)
        input_copies = [t.untyped_storage() for i, t in enumerate(self.reconstructed_inputs)
                        if isinstance(t, torch.Tensor) and i in self.non_static_input_idx]
        _hold_pool_memory(self, input_copies + list(self.output_memory.values()))
        if not new_memory:
            return list(outputs)
        _native.load()  # torch.ops.npusim._graph_output_aliases
        handed_out = list(outputs)
        fresh = torch.ops.npusim._graph_output_aliases([outputs[i] for i in new_memory])
        for index, tensor in zip(new_memory, fresh):
            handed_out[index] = tensor
        return handed_out

    def _add_first_outputs(self, outputs: OutputType,
                           static_input_persistent_storage_ptrs: dict[int, StorageWeakRefWrapper]) -> None:
        "Add the outputs from the first invocation of the node and set up metadata"
        # Liveness before this node's outputs join the path (both lists have the same length).
        prev_liveness = self.recorded_liveness_before_graph
        curr_liveness = self._get_liveness(self.path_weakrefs)
        self.expected_dead_indices_after_graph = self._get_different_indices(prev_liveness, curr_liveness)

        if len(self.outputs_weakrefs) != 0:
            raise RuntimeError("check len(self.outputs_weakrefs) == 0 fail")
        output_new_storages_index: dict[StorageDataPtr, int] = {}
        self.unaliased_in_all_paths = [False for _ in range(len(outputs))]
        self.static_output_tensors = [None for _ in range(len(outputs))]

        for index_, out_ in enumerate(outputs):
            if out_ is None or not isinstance(out_, torch.Tensor):
                self.output_storage_alias.append(UnaliasedStorage)
                continue
            torch._check(out_.is_npu or out_.untyped_storage().data_ptr() == 0,
                         lambda: ("Expected all npu outputs in npu graph recording. Non npu output "
                                  f"from {self.stack_traces[index_] if self.stack_traces else '(unknown)'}"))
            pointer = out_.untyped_storage().data_ptr()
            ref = static_input_persistent_storage_ptrs.get(pointer, None)
            # Empty storages are static outputs too: nothing to manage.
            if (ref and ref() is not None) or pointer == 0:
                self.output_storage_alias.append(None)
                self.static_output_tensors[index_] = out_
                continue
            path_ref = self._is_alias_of_live_recorded_tensor(out_)
            if path_ref is not None:
                self._mark_prior_graph_output_as_aliased(path_ref)
                for idx, inp_path_ref in enumerate(self.live_npugraph_managed_path_refs):
                    if path_ref == inp_path_ref:
                        self.preserved_aliased_inputs[idx] = True
                self.output_storage_alias.append(AliasesPriorGraphOutput(path_ref))
                continue
            if pointer in output_new_storages_index:
                index = output_new_storages_index[pointer]
                self.unaliased_in_all_paths[index] = False
                self.output_storage_alias.append(AliasesNewOutput(index))
                continue
            output_new_storages_index[pointer] = index_
            self.output_storage_alias.append(UnaliasedStorage)
            self.unaliased_in_all_paths[index_] = True

        if self.stack_traces is None:
            self.stack_traces = [None for _ in range(len(outputs))]
        elif len(self.stack_traces) != len(outputs):
            raise RuntimeError("Wrong number of stack traces passed in")

        if self.outputs_weakrefs:
            raise RuntimeError("check self.outputs_weakrefs is None fail")
        for out, static_output_tensor in zip(outputs, self.static_output_tensors):
            if not isinstance(out, torch.Tensor) or static_output_tensor is not None:
                self.outputs_weakrefs.append(None)
                self.tensor_weakrefs.append(None)
            else:
                self.outputs_weakrefs.append(StorageWeakRefWrapper(out))
                self.tensor_weakrefs.append(TensorWeakRef(out))

        self.recorded_liveness_after_graph = self._get_liveness(self.path_weakrefs)
        self.checkpointed_caching_state = _C._npu_getCheckpointState(self.device, self.npu_graphs_pool)
        for depth, path_weakref in enumerate(self.path_weakrefs):
            for output_index, weakref_ in enumerate(path_weakref):
                if is_live(weakref_):
                    self.live_indices_after_graph.append((depth, output_index))
        self.debug_check_invariants_after_invocation()
        if config.triton.slow_path_cudagraph_asserts:
            check_memory_pool(self.device, self.npu_graphs_pool,
                              pool_live_weakrefs(self.device, self.npu_graphs_pool, list(self.path_live_weakrefs())))

    def _mark_prior_graph_output_as_aliased(self, index: PathOutputIndex) -> None:
        "Remove a graph output from the unaliased, cached tensors in an ancestor node"
        depth, output_index = index
        node = list(self._path_from_root)[depth]
        node.unaliased_in_all_paths[output_index] = False
        x = self.path_weakrefs[depth][output_index]
        if x is None:
            raise RuntimeError("check x is not None fail")
        x.remove_extra_reference()

    def _initialize_cached_tensors(self) -> None:
        # outputs_weakrefs were set by the recording and are never cleared.
        if len(self.outputs_weakrefs) != len(self.outputs_metadata):
            raise RuntimeError("check len(self.outputs_weakrefs) == len(self.outputs_metadata) fail")
        for i, (storage_info, metadata, make_cached) in enumerate(
                zip(self.output_storage_alias, self.outputs_metadata, self.unaliased_in_all_paths)):
            if not make_cached:
                self.cached_tensor_outputs.append(None)
                continue
            if storage_info is not UnaliasedStorage:
                raise RuntimeError("check storage_info is UnaliasedStorage fail")
            if not isinstance(metadata, dict):
                raise RuntimeError("check isinstance(metadata, dict) fail")
            s = self.create_storage(metadata)
            out = self._reconstruct_from_tensor_metadata(metadata, storage=s)
            # Autograd (gradient buffer in-placing) and the AMP cache ignore the tree's extra
            # reference to a cached tensor.
            _C._add_cached_tensor(out)
            self_ref = weakref.ref(self)

            # One reference in our list, one for sys.getrefcount's argument.
            def check_refcount(ref_count: int, ref_self: Any) -> bool:
                self_loc = ref_self()
                if self_loc is None:
                    return False
                return self_loc.get_output_refcount(ref_count) == 2

            check = functools.partial(check_refcount, ref_count=i, ref_self=self_ref)
            self.outputs_weakrefs[i] = StorageWeakRefWrapper(out, extra_ref_check=check)
            self.cached_tensor_outputs.append(out)

    def get_output_refcount(self, index: int) -> int:
        return sys.getrefcount(self.cached_tensor_outputs[index])

    @property
    def parent(self) -> Optional[NPUGraphNode]:
        "unwraps the weakref to _parent"
        return self._parent() if self._parent is not None else None

    @property
    def _path_to_root(self) -> Generator[NPUGraphNode, None, None]:
        "Returns all nodes in the path starting at self and ending at root"
        node = self
        while node:
            yield node
            node = node.parent

    @property
    def _path_from_root(self) -> Generator[NPUGraphNode, None, None]:
        "Returns all nodes in the path starting at the root and ending at self"
        yield from reversed(list(self._path_to_root))

    def _is_npu_graph_recorded_tensor(self, t: torch.Tensor) -> bool:
        "Is this tensor an output of a node in this path"
        pointer = t.untyped_storage().data_ptr()
        # Liveness does not matter: graph-managed memory is never released while the tree lives.
        return any(ref is not None and ref.data_ptr() == pointer for refs in self.path_weakrefs for ref in refs)

    def _is_alias_of_live_recorded_tensor(self, t: torch.Tensor) -> Optional[PathOutputIndex]:
        pointer = t.untyped_storage().data_ptr()
        for depth, output_refs in enumerate(self.path_weakrefs):
            for output_index, storage_ref in enumerate(output_refs):
                storage_and_ptr = maybe_deref(storage_ref)
                if storage_and_ptr is not None and storage_and_ptr[1] == pointer:
                    return depth, output_index
        return None

    @staticmethod
    def _check_liveness(indices: list[PathOutputIndex],
                        output_refs: list[list[Optional[StorageWeakRefWrapper]]]) -> bool:
        "Check that all of the indices specified are dead references"
        for depth, output_index in indices:
            w = output_refs[depth][output_index]
            if w is None:
                raise RuntimeError("check w is not None fail")
            if w() is not None:
                return False
        return True

    def add_child(self, function_id: FunctionID, node: NPUGraphNode) -> None:
        "Adds node as a a child of self"
        self.children[function_id].append(node)

    @staticmethod
    def _get_different_indices(prev: list[list[bool]], curr: list[list[bool]]) -> list[PathOutputIndex]:
        "Find indices where the two lists differ."
        dead_indices = []
        if not len(prev) <= len(curr):
            raise RuntimeError("check len(prev) <= len(curr) fail")
        for i, (outputs1, outputs2) in enumerate(zip(prev, curr)):
            if len(outputs1) != len(outputs2):
                raise RuntimeError("check len(outputs1) == len(outputs2) fail")
            for j, (output1, output2) in enumerate(zip(outputs1, outputs2)):
                if output1 != output2:
                    dead_indices.append((i, j))
        return dead_indices

    @staticmethod
    def _get_liveness(weakrefs: list[list[Optional[StorageWeakRefWrapper]]]) -> list[list[bool]]:
        "Maps weakrefs to true if the reference is alive and false otherwise"
        if len(weakrefs) == 0:
            return []
        return [pytree.tree_map(is_live, outputs) for outputs in weakrefs]

    def debug_assert_invariants(self, expected_liveness: list[list[bool]], newly_dead: list[PathOutputIndex]) -> None:
        if not config.triton.fast_path_cudagraph_asserts:
            return
        for i, node in enumerate(self._path_from_root):
            if self.path_weakrefs[i] is not node.outputs_weakrefs:
                raise RuntimeError("check self.path_weakrefs[i] is node.outputs_weakrefs fail")
        nodes = list(self._path_from_root)
        live_blocks = get_block_addrs(self.npu_graphs_pool)
        live_storage_data_ptrs = set()
        live_storage_weak_ptrs = set()
        for depth, outputs_liveness in enumerate(expected_liveness):
            for output_idx, output_liveness in enumerate(outputs_liveness):
                # An output may die early, never live when it should be dead.
                w = self.path_weakrefs[depth][output_idx]
                stor_weak_ptr_and_data_ptr = maybe_deref(w)
                if stor_weak_ptr_and_data_ptr is None:
                    continue
                if output_liveness is None:
                    raise RuntimeError("check output_liveness is not None fail")
                stor_weak_ptr, stor_data_ptr = stor_weak_ptr_and_data_ptr
                if (stor_data_ptr in live_storage_data_ptrs) != (stor_weak_ptr in live_storage_weak_ptrs):
                    raise RuntimeError("check (stor_data_ptr in live_storage_data_ptrs) == "
                                       "(stor_weak_ptr in live_storage_weak_ptrs) fail")
                live_storage_data_ptrs.add(stor_data_ptr)
                live_storage_weak_ptrs.add(stor_weak_ptr)
                if nodes[depth].static_output_tensors[output_idx] is not None and stor_data_ptr in live_blocks:
                    raise RuntimeError("check stor_data_ptr not in live_blocks fail")
        for depth, output_index in newly_dead:
            if is_live(self.path_weakrefs[depth][output_index]):
                raise RuntimeError("check not is_live(self.path_weakrefs[depth][output_index]) fail")

    def debug_check_invariants_before_invocation(self) -> None:
        self.debug_assert_invariants(self.recorded_liveness_before_graph, self.expected_dead_indices_before_graph)

    def debug_check_invariants_after_invocation(self) -> None:
        self.debug_assert_invariants(self.recorded_liveness_before_graph, self.expected_dead_indices_after_graph)

    def data_ptrs_dead_since_invocation(self) -> list[int]:
        """Data pointers of the path's outputs that died since this node ran."""
        curr_liveness = self._get_liveness(self.path_weakrefs)
        different = self._get_different_indices(self.recorded_liveness_after_graph, curr_liveness)
        path = list(self._path_from_root)
        return [path[depth].outputs_metadata[output_index]["data_ptr"] for depth, output_index in different]

    def path_live_weakrefs(self) -> Iterator[StorageWeakRefWrapper]:
        for i, j in self.live_indices_after_graph:
            out = self.path_weakrefs[i][j]
            if out is not None and is_live(out):
                yield out

    def remove_node_cached_tensors(self) -> None:
        for t in self.cached_tensor_outputs:
            if t is not None:
                _C._remove_cached_tensor(t)
        self.cached_tensor_outputs.clear()
        for i, unaliased in enumerate(self.unaliased_in_all_paths):
            if unaliased:
                n = self.outputs_weakrefs[i]
                if n is None:
                    raise RuntimeError("check n is not None fail")
                n.remove_extra_reference()

    def remove_path_cached_tensors(self) -> None:
        for node in self._path_from_root:
            node.remove_node_cached_tensors()

    def clear_path_state(self) -> None:
        "Clear the path state in this current executing node"
        # Nothing to clear: the path's state lives in its nodes' weak references.

    @staticmethod
    def _tensor_metadata(x: torch.Tensor, ignore_storage_offset: bool = True) -> dict[str, Any]:
        if not isinstance(x, torch.Tensor):
            raise RuntimeError("check isinstance(x, torch.Tensor) fail")
        # Inputs are copied from offset 0; outputs keep theirs.
        return {
            "nbytes": x.untyped_storage().nbytes(),
            "data_ptr": x.untyped_storage().data_ptr(),
            "size": x.shape,
            "stride": x.stride(),
            "dtype": x.dtype,
            "device": x.device,
            "storage_offset": x.storage_offset() if not ignore_storage_offset else 0,
        }

    def _reconstruct_from_tensor_metadata(self, metadata: dict[str, Any],
                                          storage: Optional[UntypedStorage] = None) -> Tensor:
        s = self.create_storage(metadata) if storage is None else storage
        return _C._construct_NPU_Tensor_From_Storage_And_Metadata(metadata, s)

    def create_storage(self, metadata: dict[str, Any]) -> torch.types.Storage:
        """A storage of its own over the node's output memory at ``metadata``'s data pointer
        (it keeps that memory valid for as long as it lives)."""
        from npusim.compile import _native

        memory = self.output_memory.get(metadata["data_ptr"])
        if memory is None:
            raise RuntimeError(f"NPUGraph tree node {self.id.id} has no output memory at data pointer "
                               f"{metadata['data_ptr']}")
        _native.load()
        whole = torch.empty((0,), dtype=torch.uint8, device=memory.device).set_(memory)
        return torch.ops.npusim._graph_output_aliases([whole])[0].untyped_storage()

    def _allocate_and_copy_recording_inputs(self, inputs: list[InputType]) -> list[InputType]:
        """Copies of the non-static inputs in the graphs' pool (static and graph-managed inputs
        are used in place)."""
        torch.npu.synchronize()
        self.stream.wait_stream(torch.npu.current_stream())
        recording_inputs: list[InputType] = []
        with warnings.catch_warnings(record=True), torch.npu.device(self.device), \
                _use_npu_memory_pool_manager(self.device, mem_pool=self.npu_graphs_pool, stream=self.stream):
            for i, inp in enumerate(inputs):
                if not isinstance(inp, torch.Tensor):
                    if not isinstance(inp, int):
                        raise RuntimeError("check isinstance(inp, int) fail")
                    recording_inputs.append(inp)
                elif i not in self.static_input_idxs:
                    recording_inputs.append(static_input(inp))  # allocates in the pool
                else:
                    recording_inputs.append(inp)
            self._copy_inputs_and_remove_from_src(recording_inputs, inputs)
        return recording_inputs

    def check_invariants(self, inputs: list[InputType]) -> tuple[CheckInvariantStatus, Callable[..., str]]:
        """Whether this node can run on ``inputs``: the graph-managed inputs and the liveness of
        the path's outputs are as at recording."""
        _logger = functools.partial(log_data_ptr_mismatch, self.wrapped_function.placeholders, inputs,
                                    self.static_input_data_ptrs)
        if not _C._tensors_data_ptrs_at_indices_equal(inputs, self.static_input_data_ptrs,
                                                                self.npugraph_managed_idxs):
            status = CheckInvariantStatus.CudagraphManagedIdxMismatch
            return status, functools.partial(_logger, self.npugraph_managed_idxs, status)
        if not self._check_liveness(self.expected_dead_indices_before_graph, self.path_weakrefs):
            status = CheckInvariantStatus.ExpectedDeadIndicesBeforeGraphMismatch
            return status, lambda: f"{status}"
        # Moved static inputs re-record here when allowed (else check_static_inputs_are_stable
        # raises).
        if self.rerecord_if_static_inputs_change and not _C._tensors_data_ptrs_at_indices_equal(
                inputs, self.static_input_data_ptrs, self.static_input_idxs):
            status = CheckInvariantStatus.StaticInputIdxMismatch
            return status, functools.partial(_logger, self.static_input_idxs, status)
        # Managed inputs that died during the recording must die now too: after the replay it
        # would be too late, their memory would be overwritten.
        for idx in self.npugraph_managed_idxs:
            if not self.preserved_aliased_inputs[idx]:
                inputs[idx] = None
        torch._check(self._check_liveness(self.expected_dead_indices_after_graph, self.path_weakrefs),
                     lambda: "graph recording observed an input tensor deallocate during graph "
                             " recording that did not occur during replay. Please file an issue.")
        return CheckInvariantStatus.SUCCESS, lambda: f"{CheckInvariantStatus.SUCCESS}"

    def num_descendants(self) -> int:
        "Total number of descendents of this node"
        return sum(1 + child.num_descendants() for children in self.children.values() for child in children)


def get_npugraph_segments(pool_id: tuple[int, int]) -> Any:
    segments = torch.npu.memory_snapshot()
    return [segment for segment in segments if segment["segment_pool_id"] == pool_id]


def get_block_addrs(pool_id: tuple[int, int], live_only: bool = True) -> list[int]:
    blocks = []
    for segment in get_npugraph_segments(pool_id):
        addr = segment["address"]
        for block in segment["blocks"]:
            if block["state"] == "active_allocated" or not live_only:
                blocks.append(addr)
            addr += block["size"]
    return blocks


def format_tb(frames: list[Any]) -> str:
    summaries = [traceback.FrameSummary(entry["filename"], entry["line"], entry["name"]) for entry in frames]
    return "".join(traceback.format_list(summaries))


def check_memory_pool(device: int, pool_id: tuple[int, int], live_storages_ptrs: list[StorageWeakRefWrapper]) -> None:
    """Raise unless the allocated blocks of the pool are exactly the live storages given."""
    if not all(isinstance(elem, StorageWeakRefWrapper) for elem in live_storages_ptrs):
        raise RuntimeError("check all(isinstance(elem, StorageWeakRefWrapper) for elem in live_storages_ptrs) fail")
    unique_storages = {stor.data_ptr() for stor in live_storages_ptrs if stor()}
    if _C._npu_checkPoolLiveAllocations(device, pool_id, unique_storages):
        return
    # The slow path, for the message: collect first, a cycle may hold a dead storage.
    gc.collect()
    allocated_not_in_live_storages = {}
    for segment in get_npugraph_segments(pool_id):
        addr = segment["address"]
        for block in segment["blocks"]:
            if block["state"] == "active_allocated":
                if addr not in unique_storages:
                    allocated_not_in_live_storages[addr] = block
                else:
                    unique_storages.remove(addr)
            addr += block["size"]
    torch._check(len(unique_storages) == 0,
                 lambda: f"These storage data ptrs are not allocated in pool {pool_id} but should be {unique_storages}")
    if allocated_not_in_live_storages:
        formatted = [f"Data Pointer: {dp}, history: \n{format_tb(block.get('frames', []))}"
                     for dp, block in allocated_not_in_live_storages.items()]
        formatted_s = "\n".join(formatted)
        raise RuntimeError("These live storage data ptrs are in the npugraph pool but not "
                           f"accounted for as an output of npugraph trees: \n\n{formatted_s}")


class ExecutionState(Enum):
    """The state of the tree: NONE when no memory of the current path is live in the pool,
    else that of the node that ran last."""

    NONE = auto()
    WARMUP = auto()
    RECORDING = auto()
    EXECUTION = auto()


class CompilationMode(Enum):
    FORWARD = auto()
    BACKWARD = auto()
    INFERENCE = auto()


class NPUGraphTreeManager:
    """One device's tree of NPUGraph recordings: decides for each call of a compiled function
    whether it warms up, replays a recorded node or records a new one, and ends the current
    path when a new generation begins or all its outputs died.

    Warm-up runs in the graphs' pool, so that memory is accounted for as recording expects, and
    returns its results (the first call of a function does not compute twice)."""

    def __init__(self, device_index: int) -> None:
        self.roots: dict[FunctionID, list[NPUGraphNode]] = defaultdict(list)
        self.ids_to_funcs: dict[FunctionID, WrappedFunction] = {}
        self.ids_to_stack_traces: dict[FunctionID, Optional[StackTraces]] = {}
        self.warmed_up_functions: set[FunctionID] = set()
        # Functions warned about not reaching the fast path (once each).
        self.warned_functions: set[FunctionID] = set()
        _C._set_cached_tensors_enabled(True)
        # Functions warned about mutating inputs the graphs do not manage.
        self.warned_mutation: set[FunctionID] = set()

        with torch.npu.device(device_index):
            torch.npu.synchronize()
            self.stream = torch.npu.Stream()
            self.stream.wait_stream(torch.npu.current_stream())
            # An empty capture into the pool keeps the pool alive for the manager's life.
            self.graph: Optional[torch.npu.NPUGraph] = torch.npu.NPUGraph()
            self.npu_graphs_thread_pool = torch.npu.graph_pool_handle()
            with warnings.catch_warnings(record=True), torch.npu.graph(
                    self.graph, pool=self.npu_graphs_thread_pool, stream=self.stream,
                    capture_error_mode="thread_local"):
                pass

        self.graph_counter = itertools.count(0)
        self.func_counter = itertools.count(0)
        # Per node, per function: whether the function mutates inputs the graphs do not manage
        # (it then always runs without a graph).
        self.non_npugraph_managed_mutation_hint: dict[Optional[GraphID], dict[FunctionID, bool]] = defaultdict(dict)
        self.warmup_node_counter = itertools.count(start=-1, step=-1)
        # Re-recordings of a function under a node because its static inputs moved.
        self.num_rerecord: dict[Optional[GraphID], dict[FunctionID, int]] = defaultdict(lambda: defaultdict(lambda: 0))
        self.path_state = ExecutionState.NONE
        self.device_index = device_index
        self.current_node: Optional[Union[NPUGraphNode, NPUWarmupNode]] = None
        # The generation the current path runs in.
        self.current_gen: int = -1
        self.debug_fail_counter = 0
        self.debug_checkpointing_counter = 0
        self.id_to_mode: dict[FunctionID, CompilationMode] = {}
        # A forward ran and its backward has not yet: the generation goes on.
        self.running_forwards_with_pending_backwards = False
        self.mode: Optional[CompilationMode] = None
        self.disable_invalidate_aliases = False

    def run(self, new_inputs: list[InputType], function_id: FunctionID) -> OutputType:
        if self.graph is None:
            raise RuntimeError("Running NPUGraph after shutdown")
        self.mode = self.id_to_mode[function_id]
        out = self._run(new_inputs, function_id)
        if self.mode == CompilationMode.FORWARD:
            self.running_forwards_with_pending_backwards = True
        elif self.mode == CompilationMode.BACKWARD:
            self.running_forwards_with_pending_backwards = False
        return out

    def set_to_running_backward(self) -> None:
        self.running_forwards_with_pending_backwards = False
        self.mode = CompilationMode.BACKWARD

    def _get_npu_graph_recorded_tensor_checker(self) -> Callable[[Tensor], bool]:
        if isinstance(self.current_node, (NPUGraphNode, NPUWarmupNode)):
            return self.current_node._is_npu_graph_recorded_tensor
        return lambda _: False

    def new_warmup_node_id(self) -> GraphID:
        return GraphID(next(self.warmup_node_counter))

    def _update_non_npugraph_managed_mutation(self, function_id: FunctionID, inputs: list[InputType]) -> None:
        node_id = self._get_node_id()
        maybe_mutation_str = check_for_mutation(self.ids_to_funcs[function_id], inputs,
                                                self._get_npu_graph_recorded_tensor_checker())
        if maybe_mutation_str:
            self.non_npugraph_managed_mutation_hint[node_id][function_id] = True
            if function_id in self.warned_mutation:
                return
            self.warned_mutation.add(function_id)
            log_cudagraph_skip_and_bump_counter(maybe_mutation_str)
        else:
            self.non_npugraph_managed_mutation_hint[node_id][function_id] = False

    def _get_node_id(self) -> Optional[GraphID]:
        if self.current_node is None:
            return None
        if isinstance(self.current_node, (NPUGraphNode, NPUWarmupNode)):
            return self.current_node.id
        raise RuntimeError(f"Unknown node type {type(self.current_node)}")

    def exceed_rerecord_limit(self, node_id: Optional[GraphID], function_id: FunctionID) -> bool:
        if torch._dynamo.config.inline_inbuilt_nn_modules:
            return False
        return self.num_rerecord[node_id][function_id] > config.triton.cudagraph_unexpected_rerecord_limit

    def _run(self, new_inputs: list[InputType], function_id: FunctionID) -> OutputType:
        # The current path ends where it can (new generation, or all its outputs dead).
        if self.in_recording:
            self.try_end_curr_recording(function_id)
        if self.in_warmup:
            self.try_end_curr_warmup(function_id)

        node_id = self._get_node_id()
        if function_id not in self.non_npugraph_managed_mutation_hint[node_id]:
            self._update_non_npugraph_managed_mutation(function_id, new_inputs)
        # Mutating inputs the graphs do not manage, or re-recorded too often: no graph.
        if self.non_npugraph_managed_mutation_hint[node_id][function_id] or \
                self.exceed_rerecord_limit(node_id, function_id):
            stats["eager"] += 1
            return self.ids_to_funcs[function_id].model(new_inputs)

        # Warm up a function's first call, and every call that follows a warm-up in its path
        # (recording needs stable addresses).
        if (not (function_id in self.warmed_up_functions or config.triton.skip_cudagraph_warmup)
                or self.in_warmup or config.triton.force_cudagraphs_warmup):
            if self.path_state == ExecutionState.EXECUTION:
                self.apply_checkpoint_execution_state_in_allocator()
            return self.run_eager(new_inputs, function_id)

        if isinstance(self.current_node, NPUWarmupNode):
            raise RuntimeError("self.current_node is NPUWarmupNode object")
        child_nodes = self.roots if self.current_node is None else self.current_node.children

        if not self.in_recording:
            unexpected_rerecord, unexpected_rerecord_reason = False, lambda: ""
            for child in child_nodes[function_id]:
                status, status_logger = child.check_invariants(new_inputs)
                if status == CheckInvariantStatus.SUCCESS:
                    return self.execute_node(child, new_inputs)
                if status in (CheckInvariantStatus.StaticInputIdxMismatch,
                              CheckInvariantStatus.CudagraphManagedIdxMismatch):
                    unexpected_rerecord = True
                    unexpected_rerecord_reason = status_logger

            # Not a child of the current node: a root ends the current execution if it can,
            # and then runs as a root.
            if self.current_node is not None and function_id in self.roots:
                self.try_end_curr_execution()
                if self.current_node is None:
                    return self.run(new_inputs, function_id)

            if len(self.ids_to_funcs[function_id].mutated_input_idxs) > 0:
                self._update_non_npugraph_managed_mutation(function_id, new_inputs)
                if self.non_npugraph_managed_mutation_hint[self._get_node_id()][function_id]:
                    stats["eager"] += 1
                    return self.ids_to_funcs[function_id].model(new_inputs)

            if unexpected_rerecord:
                curr_node_id = self._get_node_id()
                self.num_rerecord[curr_node_id][function_id] += 1
                if self.exceed_rerecord_limit(curr_node_id, function_id):
                    _id = curr_node_id.id if curr_node_id else None
                    log_cudagraph_skip_and_bump_counter(
                        f"skipping npugraph due to function {function_id.id} exceeding max re-recording limit "
                        f"(={config.triton.cudagraph_unexpected_rerecord_limit}) on npugraph node {_id} "
                        f"due to {unexpected_rerecord_reason()}.")
                    stats["eager"] += 1
                    return self.ids_to_funcs[function_id].model(new_inputs)

            # No recorded node fits: record one, after the current path if it goes on.
            self.debug_fail_counter += 1
            self.try_end_curr_execution()
            if self.current_node is not None:
                self.apply_checkpoint_execution_state_in_allocator()

        return self.record_function(new_inputs, function_id)

    def shutdown(self) -> None:
        """Remove the cached tensors of all nodes: they may hold gradients that reference a
        backward that runs a graph node (a reference cycle)."""
        nodes = []
        for roots in self.roots.values():
            nodes.extend(roots)
        while nodes:
            node = nodes.pop()
            for children in node.children.values():
                nodes.extend(children)
            node.remove_node_cached_tensors()
            node.graph = None
        self.graph = None
        self.roots = None
        self.current_node = None

    def record_function(self, new_inputs: list[InputType], function_id: FunctionID) -> OutputType:
        if isinstance(self.current_node, NPUWarmupNode):
            raise RuntimeError("self.current_node is NPUWarmupNode object")
        graph_id = self.new_graph_id()
        log.debug("NPUGRAPH-TREE Node Record function=%s, graph=%s", function_id.id, graph_id.id)
        torch.npu.synchronize()
        node = NPUGraphNode(self.ids_to_funcs[function_id], graph_id, self.current_node, new_inputs,
                            self.npu_graphs_thread_pool, self.device_index, self.ids_to_stack_traces[function_id],
                            self.stream)
        if self.current_node is None:
            self.roots[function_id].append(node)
        else:
            self.current_node.add_child(function_id, node)
        self.current_node = node
        self.path_state = ExecutionState.RECORDING
        self.update_generation()
        torch.npu.synchronize()
        stats["captured"] += 1
        return node.run_first_inputs(new_inputs)

    def execute_node(self, node: NPUGraphNode, new_inputs: list[InputType]) -> OutputType:
        self.current_node = node
        self.path_state = ExecutionState.EXECUTION
        self.update_generation()
        stats["replayed"] += 1
        return node.run(new_inputs)

    def run_eager(self, new_inputs: list[InputType], function_id: FunctionID) -> OutputType:
        # Warming up, or running without a graph after an ancestor's warm-up.
        already_warm = function_id in self.warmed_up_functions
        stats["eager" if already_warm else "warmups"] += 1
        self.warmed_up_functions.add(function_id)
        node = NPUWarmupNode(self.ids_to_funcs[function_id], self.current_node, self.npu_graphs_thread_pool,
                             self.graph, self.device_index, self.ids_to_stack_traces[function_id], self.stream,
                             already_warm, self.new_warmup_node_id())
        self.current_node = node
        self.path_state = ExecutionState.WARMUP
        self.update_generation()
        return node.run(new_inputs)

    def new_graph_id(self) -> GraphID:
        return GraphID(next(self.graph_counter))

    def new_func_id(self) -> FunctionID:
        return FunctionID(next(self.func_counter))

    def add_function(self, model: ModelType, inputs: list[InputType], static_input_idxs: Sequence[int],
                     stack_traces: Optional[StackTraces], mode: CompilationMode, constants: tuple[Tensor, ...],
                     placeholders: tuple[PlaceholderInfo, ...],
                     mutated_input_idxs: tuple[int, ...]) -> tuple[ModelType, OutputType]:
        id_for_func = self.new_func_id()
        self.ids_to_stack_traces[id_for_func] = stack_traces
        self.ids_to_funcs[id_for_func] = WrappedFunction(
            model, list(static_input_idxs), id_for_func,
            tuple(t for t in constants if isinstance(t, torch.Tensor) and t.is_npu), placeholders, mutated_input_idxs)
        self.id_to_mode[id_for_func] = mode
        fn = functools.partial(self.run, function_id=id_for_func)
        # The container keeps the manager while a function lives.
        get_container(self.device_index).add_strong_reference(fn)
        return fn, fn(inputs)

    @property
    def in_recording(self) -> bool:
        return self.path_state == ExecutionState.RECORDING

    @property
    def in_warmup(self) -> bool:
        return self.path_state == ExecutionState.WARMUP

    def get_roots(self) -> Iterator[NPUGraphNode]:
        for nodes in self.roots.values():
            yield from nodes

    @property
    def current_node(self) -> Optional[Union[NPUGraphNode, NPUWarmupNode]]:
        return self._current_node

    @current_node.setter
    def current_node(self, value: Optional[Union[NPUGraphNode, NPUWarmupNode]]) -> None:
        self._current_node = value
        if value is None:
            self.path_state = ExecutionState.NONE

    def update_generation(self) -> None:
        self.current_gen = self.get_curr_generation()

    @staticmethod
    def get_curr_generation() -> int:
        if MarkStepBox.mark_step_counter != 0:
            return MarkStepBox.mark_step_counter
        return GenerationTracker.generation

    @staticmethod
    def user_invoked_mark_step() -> bool:
        return MarkStepBox.mark_step_counter != 0

    def can_start_new_generation(self) -> bool:
        if not self.in_new_torch_compile_invocation():
            return False
        if self.user_invoked_mark_step():
            return True
        return not self.running_forwards_with_pending_backwards

    def in_new_torch_compile_invocation(self) -> bool:
        return self.current_gen != self.get_curr_generation()

    def try_end_curr_recording(self, function_id: FunctionID) -> None:
        """End the current recording path if its outputs all died or a new generation began
        (then its live outputs are invalidated)."""
        if not self.in_recording:
            raise RuntimeError("check self.in_recording fail")
        if self.current_node is None:
            raise RuntimeError("check self.current_node is not None fail")
        if self.can_start_new_generation():
            self.dealloc_current_path_weakrefs()
            self.clear_current_path_state_and_set_to_none()
            return
        if self.current_node.all_outputs_are_dead():
            self.clear_current_path_state_and_set_to_none()
            return
        self.check_warn_on_unable_to_start_executing(function_id)

    def try_end_curr_execution(self) -> None:
        """End the current execution path if its outputs all died or a new generation began."""
        if self.in_recording:
            raise RuntimeError("check not self.in_recording fail")
        if self.current_node is None:
            return
        if self.can_start_new_generation():
            self.clear_current_path_state_and_set_to_none()
            return
        if self.current_node.all_outputs_are_dead():
            self.clear_current_path_state_and_set_to_none()

    def try_end_curr_warmup(self, function_id: FunctionID) -> None:
        if self.can_start_new_generation():
            self.dealloc_current_path_weakrefs()
            self.current_node = None
            return
        if self.current_node is None:
            raise RuntimeError("check self.current_node is not None fail")
        if self.current_node.all_outputs_are_dead():
            self.current_node = None
            return
        self.check_warn_on_unable_to_start_executing(function_id)

    def check_warn_on_unable_to_start_executing(self, function_id: FunctionID) -> None:
        "Warn if we in a potential loop where we are unable to hit fast path"
        if function_id in self.warned_functions or not self.in_new_torch_compile_invocation():
            return
        if self.current_node is None:
            raise RuntimeError("check self.current_node is not None fail")
        existing_nodes = [node for node in self.current_node._path_from_root
                          if node.wrapped_function.id == function_id]
        if len(existing_nodes) <= 1:
            return
        # Repeated function, same parent each time: a loop of forwards whose backwards wait.
        parents = {n.parent.wrapped_function.id for n in itertools.chain(existing_nodes, (self.current_node,))
                   if n.parent is not None}
        if len(parents) == len(existing_nodes):
            return
        self.warned_functions.add(function_id)
        warnings.warn("Unable to hit fast path of NPUGraphs because of pending, uninvoked backwards. "
                      "Consider running with torch.no_grad() or using torch.compiler.npugraph_mark_step_begin() "
                      "before each model invocation.")

    @staticmethod
    def format_dealloc_msg(stack_trace: Optional[str]) -> str:
        stack_trace = stack_trace.strip() if stack_trace else "[Could not find stack trace]"
        return ("Error: accessing tensor output of NPUGraphs that has been overwritten by a subsequent run. "
                f"Stack trace: {stack_trace}. "
                "To prevent overwriting, clone the tensor outside of torch.compile() "
                "or call torch.compiler.npugraph_mark_step_begin() before each model invocation.")

    def dealloc_current_path_weakrefs(self) -> None:
        """Invalidate the outputs of the current path that the program still holds: any later
        access raises format_dealloc_msg's error. Warm-up outputs give their memory back to
        the pool; graph outputs are views of their node's memory, whose cached tensors are
        dropped (the next replay hands out new ones)."""
        if self.current_node is None:
            raise RuntimeError("check self.current_node is not None fail")
        path = list(self.current_node._path_from_root)
        stor_stack_trace: dict[int, Optional[str]] = {}
        for node in path:
            if len(node.tensor_weakrefs) != len(node.stack_traces):
                raise RuntimeError("check len(node.tensor_weakrefs) == len(node.stack_traces) fail")
            # outputs_weakrefs and stack_traces may differ in length: zip stops at the shorter.
            for storage_ref, stack_trace in zip(node.outputs_weakrefs, node.stack_traces):
                if storage_ref:
                    stor_stack_trace[storage_ref.data_ptr()] = stack_trace

        # Memory first (a storage that raises on access cannot be freed any more): a warm-up
        # output's memory returns to the pool for the graphs that run next; a graph output's
        # is its node's and stays.
        deleted = set()
        for storage_ref in self.current_node.path_live_weakrefs():
            storage = storage_ref()
            if storage and storage_ref.data_ptr() not in deleted:
                deleted.add(storage_ref.data_ptr())
                _C._free_And_Remove_DeleterFn(storage)
                if self.disable_invalidate_aliases:
                    continue
                msg = self.format_dealloc_msg(stor_stack_trace.get(storage_ref.data_ptr()))
                _C._set_storage_data_ptr_access_error_msg(storage, msg)
        for node in path:
            for t, stack_trace in zip(node.tensor_weakrefs, node.stack_traces):
                ten = None if t is None else t()
                if ten is not None:
                    _C._set_storage_access_error_msg(ten, self.format_dealloc_msg(stack_trace))
        for node in self.current_node._path_from_root:
            if isinstance(node, NPUGraphNode):
                node.remove_node_cached_tensors()

    def clear_current_path_state_and_set_to_none(self) -> None:
        if not isinstance(self.current_node, NPUGraphNode):
            raise RuntimeError("check self.current_node is NPUGraphNode object fail")
        self.current_node.clear_path_state()
        self.current_node = None

    def apply_checkpoint_execution_state_in_allocator(self) -> None:
        """Make the allocator's state right for recording (or warming up) after the current
        path was replayed. Nodes keep their memory allocated (see the module's docstring), so the
        pool already holds every live output of the path; what remains is to drop the path's
        cached tensors, whose extra references would keep outputs that died counted as live."""
        if not isinstance(self.current_node, NPUGraphNode):
            raise RuntimeError("check self.current_node is NPUGraphNode object fail")
        self.debug_checkpointing_counter += 1
        self.current_node.remove_path_cached_tensors()
        if config.triton.slow_path_cudagraph_asserts:
            check_memory_pool(self.device_index, self.npu_graphs_thread_pool,
                              pool_live_weakrefs(self.device_index, self.npu_graphs_thread_pool,
                                                 list(self.current_node.path_live_weakrefs())))

    def live_npugraph_pool_storages_in_curr_execution(self) -> list[StorageWeakRefPointer]:
        if self.current_node is None:
            return []
        # path_live_weakrefs() guarantees that t() will not be None.
        return [t() for t in self.current_node.path_live_weakrefs()]
