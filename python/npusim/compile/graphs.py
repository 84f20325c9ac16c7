"""``torch.npu.NPUGraph``: capture the kernels of a region once, replay them many times.

On the chip (aclgraph), capture records every kernel the capture stream launches into a model
that one host call replays, on the memory the capture used. npusim records every operator
issued on the capture stream during the region: the ones of the capturing thread, the autograd
backward that runs inside the capture (on the autograd device thread, which inherits the
capture), and the fused kernels of compiled (Inductor) code. Replay runs them again in order
on the captured memory: in-place and ``out=`` operators as they were, functional operators
through their ``out=`` overloads into the captured outputs, views and fresh allocations not at
all (their memory exists already). So replay allocates nothing, and tensors the user kept from
the capture (static inputs, outputs, gradients) see the new values, as on the chip. The
captured memory stays the graph's until ``reset()`` (npusim.compile.graph_pool).

The timeline prices a replay as the real stack runs it: one graph launch from the host, and
each kernel's device time with no per-kernel host dispatch.

Capture restrictions (as CUDA graphs and torch_npu's aclgraph): the capture runs on a
non-default stream; no synchronization, no host reads of device data (``.item()``, ``.cpu()``,
data-dependent shapes), no host-device copies but ``copy_`` to or from pinned host memory
(CPU-fallback operators included), and no device
memory from outside the graph's pool (another device, ``caching_allocator_alloc``, ``empty_cache``) inside a capture. Each
raises a torch_npu-style error and ends the capture.
"""

from __future__ import annotations

import bisect
import ctypes
import json
import logging
import warnings
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from npusim import _C
from npusim._error_code import ErrCode, SubModule, error_suffix, pta_error
from npusim.compile import _native, graph_pool, kernel_launch
from npusim.compile import graph_capture_state as _capture_state
from npusim.compile import graph_trace_align
from npusim.compile.graph_updates.dispatch_capture import GraphDispatchMode
from npusim.compile.graph_updates.task_groups import ALLOCATIONS, TaskGroup, snapshot_host_values
from npusim.compile.graph_rng import CaptureRng, is_random_operator

__all__ = [
    "NPUGraph",
    "graph",
    "graph_pool_handle",
    "make_graphed_callables",
    "is_current_stream_capturing",
]


# Operators that make the host wait for device data: forbidden while capturing.
_HOST_READS = {
    "aten::_local_scalar_dense",
    "aten::item",
    "aten::nonzero",
    "aten::masked_select",
    "aten::unique",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::is_nonzero",
    "aten::equal",
}

# The timeline's unit of CPU-fallback operators (perf::Unit order, _native.timing_snapshot).
_CPU_FALLBACK_UNIT = 3

# Fresh allocations: replay leaves them alone (the memory exists, its contents are undefined).
_ALLOCATIONS = ALLOCATIONS


def _pinned_copy(name: str, tensors: list) -> bool:
    """A copy_ between device memory and pinned host memory: an asynchronous DMA task that a
    capture records (torch_npu 2.13 captures pin_memory() and such copies; the pinned block stays
    the graph's while the graph holds it, so replays read and write the same host memory)."""
    if name != "aten::copy_" or len(tensors) != 2:
        return False
    host = [t for t in tensors if t.device.type == "cpu"]
    return len(host) == 1 and host[0].is_pinned()


def _capture_error(what: str) -> RuntimeError:
    return RuntimeError(
        f"{what} is not permitted when stream is capturing: the operation would make the host wait "
        "for the device (or read device memory) inside an NPUGraph capture. Move it before the "
        "capture or after replay()." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
    )


def _outside_pool_error(what: str) -> RuntimeError:
    return RuntimeError(
        f"{what} is not permitted when stream is capturing: device memory used inside an NPUGraph "
        "capture must come from the graph's memory pool (the capture device, through the caching "
        "allocator), since replay reuses exactly the captured memory."
        + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
    )


# Operators that record their own replay steps when captured (host functions): the capture
# keeps no operator step for them.
_RECORDS_ITSELF: set[str] = set()


def records_itself(name: str) -> None:
    """Marks operator ``name`` ("namespace::name") as recording its own replay steps."""
    _RECORDS_ITSELF.add(name)


def is_current_stream_capturing() -> bool:
    r"""Whether the current stream is capturing an NPUGraph."""
    return _capture_state.current_capture() is not None


def active_capture() -> "NPUGraph | None":
    """The capture in progress, if any (for npusim's own launch paths)."""
    return _capture_state.active


def _record_launch(name: str, run: Callable[[tuple], None], arguments: tuple) -> None:
    """The recorder a capture registers with :mod:`.kernel_launch`: a compiled kernel launched
    on the capturing stream joins the graph."""
    capture = _capture_state.current_capture()
    if capture is not None:
        capture._record_kernel(name, run, arguments)


def graph_pool_handle() -> tuple[int, int]:
    r"""A memory pool id that several graphs can share (``NPUGraph.capture_begin(pool=...)``)."""
    return graph_pool.new_pool_handle()


def _host_alias(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same memory as an npu tensor (npu memory is host memory)."""
    storage = tensor.untyped_storage()
    nbytes = storage.nbytes()
    if nbytes == 0:
        return torch.empty(tensor.shape, dtype=tensor.dtype)
    buffer = (ctypes.c_char * nbytes).from_address(storage.data_ptr())
    flat = torch.frombuffer(buffer, dtype=torch.uint8).view(tensor.dtype)
    return flat.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())


def _write_back(captured: Any, fresh: Any) -> None:
    # Results land in the captured output memory (host aliases of it: a move of the kernel's own
    # output, not a device copy, so it is not charged).
    captured_flat, _ = tree_flatten(captured)
    fresh_flat, _ = tree_flatten(fresh)
    for old, new in zip(captured_flat, fresh_flat):
        if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old is not new:
            old.copy_(new)


def _on_host(value: Any) -> Any:
    """``value`` with every npu tensor replaced by its host alias and npu devices by the CPU:
    the operator then runs the very CPU kernel the executor runs, on the same memory."""
    if isinstance(value, torch.Tensor):
        return _host_alias(value) if value.device.type == "npu" else value
    if isinstance(value, torch.device):
        return torch.device("cpu") if value.type == "npu" else value
    if isinstance(value, (list, tuple)):
        mapped = [_on_host(v) for v in value]
        return mapped if isinstance(value, list) else tuple(mapped)
    if isinstance(value, dict):
        return {k: _on_host(v) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("npu"):
        return "cpu"
    return value


def _attention_bias_gradient(grad_out, query, key, value, bias, out, logsumexp, causal, scale):
    """The gradient of an additive attention bias, from the softmax rebuilt out of logsumexp (as
    the fused backward computes it when a bias requires grad)."""
    scale = scale if scale is not None else query.size(-1) ** -0.5
    scores = (query.float() @ key.float().transpose(-2, -1)) * scale + bias.float()
    if causal:
        above = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    probabilities = (scores - logsumexp.float().unsqueeze(-1)).exp()
    rows = (grad_out.float() * out.float()).sum(-1, keepdim=True)
    return (probabilities * (grad_out.float() @ value.float().transpose(-2, -1) - rows)).sum_to_size(bias.shape)


def _fused_attention_on_host(query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False,
                             return_debug_mask=False, *, scale=None):
    out, logsumexp = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query, key, value, dropout_p, is_causal, attn_mask=attn_bias, scale=scale)
    return out, logsumexp


def _fused_attention_backward_on_host(grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp,
                                      cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed,
                                      philox_offset, *, scale=None):
    grads = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=attn_bias, scale=scale)
    bias_grad = None
    if attn_bias is not None and grad_input_mask[3]:
        bias_grad = _attention_bias_gradient(grad_out, query, key, value, attn_bias, out, logsumexp, is_causal, scale)
    return (*grads, bias_grad)


# npu operators whose CPU counterpart is another operator: the npu backend runs SDPA's fused
# "overrideable" kernel as the CPU's flash kernel (csrc/backend/families/AttentionOps.cpp), whose
# own CPU registration only says it is for accelerators. Replay runs the twin on host aliases;
# results are written into the captured outputs in their layouts (the leading ones: seeds and
# offsets stay as captured).
_HOST_TWINS = {
    "aten::_scaled_dot_product_fused_attention_overrideable": _fused_attention_on_host,
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": _fused_attention_backward_on_host,
}


def _has_host_kernel(func) -> bool:
    """Whether the operator runs on CPU tensors (a CPU kernel or a composite one)."""
    name = func.name()
    return any(torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
               for key in ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd"))


class _Operation:
    """One captured operator, what it cost on the timeline, and how replay runs it again."""

    __slots__ = ("func", "args", "kwargs", "outputs", "costs", "replay")

    def __init__(self, func, args, kwargs, outputs, costs):
        self.func, self.args, self.kwargs, self.outputs = func, args, kwargs, outputs
        self.costs = costs  # ((unit, device ns, cube FLOPs), ...) charged when it was captured
        self.replay: Callable[[], None] | None = None

    @property
    def name(self) -> str:
        return str(self.func)

    def plan(self, device: int) -> str:
        """Chooses how replay reruns this operator; returns the choice (for debug_dump).

        Replay runs the operator's CPU kernel on host aliases of the captured device memory (as
        the executor runs every npu operator), so it allocates no device memory, and charges the
        device time the operator cost at capture, with no host dispatch."""

        func = self.func
        schema = func._schema
        returns = schema.returns
        costs = self.costs
        charge = _native.charge_replayed_kernel

        def charged(run: Callable[[], None] | None) -> Callable[[], None] | None:
            # In estimate-only mode (npusim.estimate()) buffers have shapes, not data: replay
            # only charges.
            if not costs:
                return None if run is None else (lambda: None if kernel_launch.npu_estimating() else run())

            def step() -> None:
                if run is not None and not kernel_launch.npu_estimating():
                    run()
                for unit, device_ns, flops in costs:
                    charge(device, unit, device_ns, flops)

            return step

        if schema.name in _ALLOCATIONS:
            self.replay = charged(None)
            return "allocation"
        if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
            self.replay = charged(None)
            return "view"
        twin = _HOST_TWINS.get(schema.name)
        if twin is not None:
            args, kwargs = _on_host(self.args), _on_host(self.kwargs)
            captured = _on_host(self.outputs)

            def run_twin() -> None:
                for old, new in zip(captured, twin(*args, **kwargs)):
                    if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
                        old.copy_(new)

            self.replay = charged(run_twin)
            return "host twin"
        host_kernel = _has_host_kernel(func)
        random = is_random_operator(func) and host_kernel
        if random or not host_kernel:
            # Through the npu kernel on the captured memory (it charges its own device time, with
            # no host dispatch while replaying), its results moved into the captured outputs:
            # torch_npu's own operators (torch.ops.npu) have npu and Meta kernels only, and a
            # random operator must draw from the npu generator's live state, as a random kernel
            # of the chip's graph reads its generator's seed and offset at replay
            # (npusim.compile.graph_rng), not from the CPU generator its CPU kernel would use.
            prefix = "random, " if random else ""
            npu_args, npu_kwargs = self.args, self.kwargs
            if not returns or any(r.alias_info is not None and r.alias_info.is_write for r in returns):
                self.replay = lambda: None if kernel_launch.npu_estimating() else func(*npu_args, **npu_kwargs)
                return prefix + "npu kernel in place"
            captured = _on_host(self.outputs)

            def run_npu() -> None:
                if not kernel_launch.npu_estimating():
                    _write_back(captured, _on_host(func(*npu_args, **npu_kwargs)))

            self.replay = run_npu
            return prefix + "npu kernel"
        args, kwargs = _on_host(self.args), _on_host(self.kwargs)
        if not returns or any(r.alias_info is not None and r.alias_info.is_write for r in returns):
            # In place or out=: the kernel writes the captured memory itself.
            self.replay = charged(lambda: func(*args, **kwargs))
            return "in place"
        # A functional operator: its result is written into the captured output memory (a host
        # temporary, never device memory).
        captured = _on_host(self.outputs)

        def run() -> None:
            _write_back(captured, func(*args, **kwargs))

        self.replay = charged(run)
        return "functional"


class _KernelLaunch:
    """A fused kernel of compiled code, captured with the tensors it was launched on."""

    __slots__ = ("name", "run", "arguments", "replay")

    def __init__(self, name: str, run: Callable[[tuple], None], arguments: tuple):
        self.name, self.run, self.arguments = name, run, arguments
        self.replay: Callable[[], None] | None = None

    def plan(self, device: int) -> str:
        run, arguments = self.run, self.arguments
        self.replay = lambda: run(arguments)
        return "compiled kernel"


class _ConditionalBody:
    """Operations captured under a predicate: replay runs them while it is nonzero."""

    __slots__ = ("pred", "body", "replay")

    def __init__(self, pred: torch.Tensor, body: list):
        self.pred, self.body, self.replay = pred, body, None

    @property
    def name(self) -> str:
        return f"if ({len(self.body)} operations)"

    def plan(self, device: int) -> str:
        for operation in self.body:
            operation.plan(device)
        steps = [operation.replay for operation in self.body if operation.replay is not None]
        predicate = _host_alias(self.pred)

        def run() -> None:
            if bool(predicate.reshape(-1)[0]):
                for step in steps:
                    step()

        self.replay = run
        return "conditional"


class _CaptureMode(TorchDispatchMode):
    """Records every operator of the capture; refuses host reads, host-device copies and
    memory from outside the graph's pool."""

    def __init__(self, graph: NPUGraph):
        super().__init__()
        self.graph = graph

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        devices = {t.device.type for t in tensors}
        if name in _HOST_READS and "npu" in devices:
            raise _capture_error(f"{name} (a host read of device data)")
        if name in ("aten::copy_", "aten::_to_copy", "aten::_copy_from", "aten::_copy_from_and_resize"):
            target = kwargs.get("device")
            if target is not None:
                devices.add(torch.device(target).type)
            if "cpu" in devices and "npu" in devices and not _pinned_copy(name, tensors):
                raise _capture_error(f"{name} between host and device")
        if is_random_operator(func) and self.graph._rng is not None:
            self.graph._rng.note_operator(func, args, kwargs, self.graph._device)
        before, flops_before = _native.timing_snapshot()
        outputs = func(*args, **kwargs)
        after, flops_after = _native.timing_snapshot()
        costs = tuple(
            (unit, after[unit] - before[unit], (flops_after - flops_before) if unit == 0 else 0.0)
            for unit in range(len(after)) if after[unit] != before[unit]
        )
        if any(unit == _CPU_FALLBACK_UNIT for unit, _, _ in costs):
            # The real stack runs it on the host through device-to-host and host-to-device
            # copies, which a capture cannot contain.
            raise _capture_error(f"{name} (not supported on the NPU backend: a CPU fallback, which copies "
                                 "device data to the host)")
        capture_device = self.graph._device
        for result in tree_flatten(outputs)[0]:
            if isinstance(result, torch.Tensor) and result.device.type == "npu" and result.device.index != capture_device:
                raise _outside_pool_error(f"{name} allocating on {result.device} while capturing on npu:{capture_device}")
        if func.namespace == "profiler":
            return outputs  # record_function markers: host-side annotations, no kernel
        if name in _RECORDS_ITSELF:
            return outputs  # recorded its host function itself
        if not _has_host_kernel(func):
            # torch_npu's own operators take host tensors (lengths, context lengths) as launch
            # arguments, by value: later changes to them reach the graph only through an update.
            args, kwargs = snapshot_host_values(args), snapshot_host_values(kwargs)
        self.graph._operations.append(_Operation(func, args, kwargs, outputs, costs))
        return outputs


class NPUGraph:
    r"""Wrapper around an NPU graph (torch_npu's ``torch.npu.NPUGraph``).

    Use :class:`graph` (a context manager) or :func:`make_graphed_callables` to capture.
    """

    def __init__(self, keep_graph: bool = False):
        # torch_npu's automatic dispatch capture: set by graph(..., auto_dispatch_capture=True).
        self.graph_dispatch_mode = GraphDispatchMode()
        self.auto_dispatch_capture = False
        self._operations: list = []
        self._mode: _CaptureMode | None = None
        self._pool: tuple[int, int] | None = None
        # This graph counts as a user of self._pool in the allocator from capture_begin to reset.
        self._pool_held = False
        self._device = -1
        self._stream = None
        self._captured = False
        self._saved: dict[str, tuple[Any, str, Callable]] = {}
        self._plans: list[str] = []
        self._steps: list[Callable[[], None]] = []
        self._pool_storages: list[tuple[int, int]] = []
        self._rng: CaptureRng | None = None
        # Open conditional bodies: (predicate, the enclosing operations) per level.
        self._conditionals: list[tuple[torch.Tensor, list]] = []
        # Open task groups: the enclosing operations per level.
        self._task_groups: list[list] = []

    def capture_begin(self, pool: tuple[int, int] | None = None, capture_error_mode: str = "global") -> None:
        r"""Begin capturing the kernels issued on the current stream into this graph."""
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise RuntimeError(
                f"Unknown capture_error_mode {capture_error_mode!r}; expected 'global', 'thread_local' "
                "or 'relaxed'." + error_suffix(SubModule.GRAPH, ErrCode.VALUE)
            )
        if self._captured:
            raise RuntimeError(
                "This NPUGraph instance already owns a captured graph. To capture a new graph, "
                "create a new instance." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        from npusim import _C

        if _C._host_allocator_expandable_segments():
            # torch_npu's check (NPUGraph::capture_begin): the expandable pinned-memory allocator
            # has no private pools, so captured pinned blocks could be recycled under the graph.
            raise RuntimeError(
                "ACLGraph capture is not supported when pin_memory_expandable_segments=True. "
                "NPUExpandableHostAllocatorImpl overrides allocate/free/empty_cache/record_event "
                "and does not integrate with the base CachingHostAllocator's private pool mechanism, "
                "which would cause capture-time pinned blocks to be incorrectly recycled and lead to "
                "data corruption on graph replay. "
                "Please unset pin_memory_expandable_segments in PYTORCH_NPU_ALLOC_CONF to use ACLGraph "
                "with pin_memory, or avoid pin_memory calls inside capture regions." + pta_error(ErrCode.NOT_SUPPORT)
            )
        stream = torch.npu.current_stream()
        if stream == torch.npu.default_stream():
            raise RuntimeError(
                "NPU graphs must be captured on a non-default stream. (However, after capture, it's ok "
                "to replay them on the default stream.)" + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        with _capture_state.lock:
            if _capture_state.active is not None:
                raise RuntimeError(
                    "Cannot begin a capture: another NPUGraph capture is in progress."
                    + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
                )
            _capture_state.active = self
        try:
            stream.synchronize()  # as on the chip: the capture starts on an idle stream
            self._pool = tuple(pool) if pool is not None and any(pool) else graph_pool.new_graph_pool()
            self._device = torch.npu.current_device()
            self._stream = stream
            self._operations = []
            graph_pool.begin_allocate_to_pool(self._device, self._pool, stream.stream_id)
            self._pool_held = True
        except BaseException:
            _capture_state.active = None
            raise
        self._mode = _CaptureMode(self)
        kernel_launch.set_capture_recorder(_record_launch)
        self._forbid_outside_calls()
        self._rng = CaptureRng(lambda step: self._operations.append(step))
        self._conditionals = []
        self._task_groups = []
        self._rng.install()
        self._mode.__enter__()

    def capture_end(self) -> None:
        r"""End the capture; the graph can then be replayed."""
        if self._mode is None:
            raise RuntimeError(
                "capture_end() without capture_begin()." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        if torch.npu.current_stream() != self._stream:
            raise RuntimeError(
                "Capture must end on the same stream it began on." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        self._finish_capture()
        _native.load()  # torch.ops.npusim._graph_unowned_aliases lives in the compile library
        self._release_pool_memory()
        self._plans = [operation.plan(self._device) for operation in self._operations]
        self._steps = [operation.replay for operation in self._operations if operation.replay is not None]
        self._captured = True

    def _finish_capture(self) -> None:
        mode, self._mode = self._mode, None
        try:
            mode.__exit__(None, None, None)
        finally:
            if self._rng is not None:
                rng, self._rng = self._rng, None
                rng.uninstall()
                rng.restore()
            self._allow_outside_calls()
            kernel_launch.set_capture_recorder(None)
            graph_pool.end_allocate_to_pool(self._device, self._pool)
            _capture_state.active = None

    def _abort_capture(self) -> None:
        if self._mode is not None:
            self._finish_capture()
        self._operations = []
        self._steps = []

    def _forbid_outside_calls(self) -> None:
        """Synchronization and raw allocator calls refuse while the capture runs."""
        from npusim.npu import memory

        npu = torch.npu

        def refuse(what: str, error: Callable[[str], RuntimeError]):
            def refused(*args, **kwargs):
                raise error(what)

            return refused

        targets = [
            (npu, "synchronize", "torch.npu.synchronize()", _capture_error),
            (npu.Stream, "synchronize", "Stream.synchronize()", _capture_error),
            (npu.Event, "synchronize", "Event.synchronize()", _capture_error),
            (npu, "caching_allocator_alloc", "torch.npu.caching_allocator_alloc()", _outside_pool_error),
            (npu, "empty_cache", "torch.npu.empty_cache()", _outside_pool_error),
        ]
        self._saved = {}
        for owner, attribute, what, error in targets:
            original = getattr(owner, attribute, None)
            if original is None:
                continue
            self._saved[what] = (owner, attribute, original)
            setattr(owner, attribute, refuse(what, error))
        for attribute, what in (("caching_allocator_alloc", "torch.npu.caching_allocator_alloc()"),
                                ("empty_cache", "torch.npu.empty_cache()")):
            original = getattr(memory, attribute, None)
            if original is not None:
                self._saved["memory." + attribute] = (memory, attribute, original)
                setattr(memory, attribute, refuse(what, _outside_pool_error))

    def _allow_outside_calls(self) -> None:
        for owner, attribute, original in self._saved.values():
            setattr(owner, attribute, original)
        self._saved = {}

    def replay(self) -> None:
        r"""Run the captured kernels again on the captured memory (one graph launch)."""
        if not self._captured:
            raise RuntimeError(
                "Called NPUGraph::replay without a preceding successful capture."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        with torch.npu.device(self._device):
            _native.charge_graph_launch(self._device)
            _native.set_replaying_graph(True)
            try:
                with torch.no_grad():
                    for step in self._steps:
                        step()
            finally:
                _native.set_replaying_graph(False)

    def reset(self) -> None:
        r"""Release the capture and the memory it held."""
        self._abort_capture()
        self._captured = False
        self._plans = []
        if self._pool_held:
            self._pool_held = False
            graph_pool.release_pool(self._device, self._pool)

    def __del__(self) -> None:
        # As CUDAGraph's destructor: the pool's memory goes back with the graph.
        try:
            if self._pool_held and self._mode is None:
                self._pool_held = False
                graph_pool.release_pool(self._device, self._pool)
        except Exception:  # noqa: BLE001 - at interpreter exit the allocator may be gone
            pass

    def pool(self) -> tuple[int, int]:
        r"""The id of this graph's memory pool (to share it with another capture)."""
        if self._pool is None:
            raise RuntimeError(
                "Called NPUGraph::pool() without a preceding successful capture."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        return self._pool

    def super_kernel_optimize(self, optimize_options=None, debug_options=None) -> None:
        r"""Fuse the captured kernels into a super kernel (CANN's aclskOptimize; not in npusim's
        CANN, see :mod:`npusim.compile.super_kernel`)."""
        from npusim.compile import super_kernel

        super_kernel.optimize(self._captured, optimize_options, debug_options)

    @staticmethod
    def get_currently_capturing_graph() -> "NPUGraph":
        r"""The graph the current stream is capturing into."""
        if _capture_state.current_capture() is None:
            raise RuntimeError(
                "The current stream is not capturing an NPUGraph." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        return _capture_state.active

    def begin_capture_to_if_node(self, scalar_npu_pred_tensor: torch.Tensor) -> None:
        r"""Capture what follows into a conditional body that replay runs only while the one-element
        npu tensor ``scalar_npu_pred_tensor`` is nonzero (read at that point of each replay)."""
        if self._mode is None:
            raise RuntimeError(
                "begin_capture_to_if_node() outside a capture." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        pred = scalar_npu_pred_tensor
        if not isinstance(pred, torch.Tensor) or pred.device.type != "npu" or pred.numel() != 1:
            raise RuntimeError(
                "begin_capture_to_if_node() needs a one-element npu tensor as its predicate."
                + error_suffix(SubModule.GRAPH, ErrCode.PARAM)
            )
        self._conditionals.append((pred, self._operations))
        self._operations = []

    def end_capture_to_conditional_node(self) -> None:
        r"""Close the conditional body opened by :meth:`begin_capture_to_if_node`."""
        if not self._conditionals:
            raise RuntimeError(
                "end_capture_to_conditional_node() without begin_capture_to_if_node()."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        pred, enclosing = self._conditionals.pop()
        body, self._operations = self._operations, enclosing
        self._operations.append(_ConditionalBody(pred, body))

    def append_step(self, step) -> None:
        """Adds a step other than an operator (an ExternalEvent node) to the capture."""
        self._operations.append(step)

    def open_task_group(self) -> None:
        """Begins a task group: what follows is captured into it (graph_task_group_begin)."""
        if self._task_groups:
            raise RuntimeError(
                "graph_task_group_begin() inside an open task group: task groups do not nest."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        self._task_groups.append(self._operations)
        self._operations = []

    def close_task_group(self) -> TaskGroup:
        """Ends the open task group and returns it (graph_task_group_end)."""
        if not self._task_groups:
            raise RuntimeError(
                "graph_task_group_end() without graph_task_group_begin()."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        group = TaskGroup(self._operations)
        self._operations = self._task_groups.pop()
        self._operations.append(group)
        return group

    def update(self, cpu_update_input) -> None:
        r"""Give the operators captured with ``auto_dispatch_capture=True`` new host arguments
        (one dict per captured operator, or one for all), e.g.
        ``[{"actual_seq_lengths": [100]}]``: later replays compute with them."""
        if not self.auto_dispatch_capture:
            raise RuntimeError(
                "The current graph configuration does not support update,"
                "Try to capture by setting auto_dispatch_capture=True during capture" + pta_error(ErrCode.PARAM)
            )
        self.graph_dispatch_mode.update_capture_record(cpu_update_input)

    def register_generator_state(self, generator) -> None:
        r"""Deprecated no-op (torch_npu 2.13): generators are registered when a random operator
        first draws from them during the capture."""
        warnings.warn(
            "NPUGraph.register_generator_state() is deprecated, and will be removed in a future torch_npu "
            "release. It is now a no-op and can be safely removed from your code. Generator states are "
            "automatically registered when RNG ops first execute during graph capture.",
            DeprecationWarning,
            stacklevel=2,
        )

    def enable_debug_mode(self) -> None:
        r"""Keep the captured operators for :meth:`debug_dump` (always kept in npusim)."""

    def debug_dump(self, debug_path: str) -> None:
        r"""Write the captured graph to ``debug_path`` as Chrome trace events, one per task on
        the capture stream, with how replay runs it; then ``<debug_path>.aligned.json``, the
        tasks laid end to end (npusim.compile.graph_trace_align). Without a successful capture
        nothing is written, as torch_npu's dump leaves the file alone then."""
        if not self._captured:
            return None
        stream = f"stream{self._stream.stream_id}" if self._stream is not None else "stream0"
        events, clock = [], 0.0
        for operation, plan in zip(self._operations, self._plans):
            costs = getattr(operation, "costs", ()) or ()
            duration = sum(device_ns for _, device_ns, _ in costs) / 1000.0
            events.append({"name": operation.name, "ph": "X", "pid": self._device, "tid": stream, "ts": clock,
                           "dur": duration, "args": {"Task Type": plan}})
            clock += duration
        with open(debug_path, "w", encoding="utf-8") as out:
            json.dump({"traceEvents": events}, out, indent=1)
        try:
            graph_trace_align.align_trace_json(debug_path, None)
        except Exception:  # noqa: BLE001 - the aligned view is optional: the dump stays
            logging.getLogger(__name__).warning(
                "Failed to generate aligned trace for %s; an existing aligned trace, if any, was not updated",
                debug_path, exc_info=True)
        return None

    @property
    def operators(self) -> list[str]:
        """The captured kernels, in order (npusim's view of the graph)."""
        return [operation.name for operation in self._operations]

    @property
    def replay_plan(self) -> list[tuple[str, str]]:
        """(kernel, how replay runs it) for each captured kernel."""
        return list(zip(self.operators, self._plans))

    def _record_kernel(self, name: str, run: Callable[[tuple], None], arguments: tuple) -> None:
        self._operations.append(_KernelLaunch(name, run, arguments))

    def _release_pool_memory(self) -> None:
        """Hold the memory the capture took from the graph's pool by address only, as the chip's
        graph does: the temporaries (allocations the program does not hold after capture) go
        back to the pool, where a later capture into the same pool may reuse them (a pool
        shared with ``pool=``, or reduce-overhead's per-device pool); the pool keeps its
        segments while this graph uses it, so the addresses stay valid. Memory from outside the
        pool (inputs, parameters) stays referenced: the program may free it. Records the
        storages of the pool that the graph's kernels use, ``(address, bytes)``."""
        segments = sorted((segment["address"], segment["address"] + segment["total_size"])
                          for segment in _C._memory_snapshot()
                          if segment["device"] == self._device and tuple(segment["segment_pool_id"]) == self._pool)
        if not segments:
            self._pool_storages = []
            return
        starts = [start for start, _ in segments]

        def in_pool(value: Any) -> bool:
            if not isinstance(value, torch.Tensor) or value.device.type != "npu":
                return False
            address = value.untyped_storage().data_ptr()
            index = bisect.bisect_right(starts, address) - 1
            return index >= 0 and address < segments[index][1]

        # Operators and compiled kernels, also those under a conditional; other steps (random
        # state, host functions) keep what they hold.
        kernels = []
        pending = list(self._operations)
        while pending:
            operation = pending.pop()
            if isinstance(operation, (_ConditionalBody, TaskGroup)):
                pending.extend(operation.body)
            elif isinstance(operation, (_Operation, _KernelLaunch)):
                kernels.append(operation)
        held = []
        for operation in kernels:
            parts = (operation.arguments,) if isinstance(operation, _KernelLaunch) else (
                operation.args, operation.kwargs, operation.outputs)
            held.extend(t for t in tree_flatten(parts)[0] if in_pool(t))
        if not held:
            self._pool_storages = []
            return
        aliases = dict(zip(map(id, held), torch.ops.npusim._graph_unowned_aliases(held)))

        def unowned(value: Any) -> Any:
            return aliases.get(id(value), value) if isinstance(value, torch.Tensor) else value

        for operation in kernels:
            if isinstance(operation, _KernelLaunch):
                operation.arguments = tuple(unowned(a) for a in operation.arguments)
            else:
                operation.args = tree_map(unowned, operation.args)
                operation.kwargs = tree_map(unowned, operation.kwargs)
                operation.outputs = tree_map(unowned, operation.outputs)
        storages = {}
        for tensor in held:
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = max(storages.get(storage.data_ptr(), 0), storage.nbytes())
        self._pool_storages = sorted(storages.items())


class graph:
    r"""Context manager that captures the kernels of its body into ``npu_graph``.

    Args:
        npu_graph (NPUGraph): the graph to capture into.
        pool (optional): a pool id from :func:`graph_pool_handle` or ``other_graph.pool()``.
        stream (torch.npu.Stream, optional): the capture stream; by default a side stream
            shared by all captures (a capture cannot run on the default stream).
        capture_error_mode (str, optional): "global", "thread_local" or "relaxed".
    """

    default_capture_stream = None

    def __init__(self, npu_graph: NPUGraph, pool=None, stream=None, auto_dispatch_capture: bool = False,
                 capture_error_mode: str = "global"):
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = torch.npu.Stream()
        self.npu_graph = npu_graph
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.capture_error_mode = capture_error_mode
        self._stream_context = torch.npu.stream(self.capture_stream)
        npu_graph.auto_dispatch_capture = auto_dispatch_capture

    def __enter__(self):
        torch.npu.synchronize()
        self._stream_context.__enter__()
        try:
            self.npu_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException as error:
            self._stream_context.__exit__(type(error), error, error.__traceback__)
            raise
        if self.npu_graph.auto_dispatch_capture:
            # Entered after the capture, so that it sees each operator first and the capture
            # records what it issues.
            self.npu_graph.graph_dispatch_mode.__enter__()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.npu_graph.auto_dispatch_capture:
            self.npu_graph.graph_dispatch_mode.__exit__(exc_type, exc_value, traceback)
        try:
            if exc_type is None:
                self.npu_graph.capture_end()
            else:
                self.npu_graph._abort_capture()
        finally:
            self._stream_context.__exit__(exc_type, exc_value, traceback)
        return False


def _graphed_error(message: str) -> RuntimeError:
    return RuntimeError(message + error_suffix(SubModule.GRAPH, ErrCode.PARAM))


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    r"""Graphed versions of ``callables`` (functions or modules), forward and backward.

    As ``torch.cuda.make_graphed_callables``: each callable runs ``num_warmup_iters`` times on a
    side stream, then its forward is captured into one graph and its backward (the gradients of
    its outputs with respect to its inputs and parameters that require grad) into another, all
    in one memory pool. A call copies its arguments into the captured inputs and replays the
    forward graph; its backward copies the incoming gradients into the captured ones and replays
    the backward graph. A graphed module keeps its original forward for the other of
    training/eval mode.
    """
    if torch.is_autocast_enabled() and torch.is_autocast_cache_enabled():
        raise RuntimeError(
            "make_graphed_callables does not support the autocast caching. Please set `cache_enabled=False`."
        )
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    flat_args = []
    for function, args in zip(callables, sample_args):
        if isinstance(function, torch.nn.Module):
            if function._backward_hooks or function._forward_hooks or function._forward_pre_hooks:
                raise _graphed_error(
                    "Modules must not have hooks registered at the time they are passed. However, registering "
                    "hooks on modules after passing them through make_graphed_callables is allowed."
                )
            if any(b.requires_grad for b in function.buffers()):
                raise _graphed_error(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, only parameters "
                    "may be trainable. All buffers must have ``requires_grad=False``."
                )
        args = args if isinstance(args, tuple) else (args,)
        leaves = tuple(torch.utils._pytree.arg_tree_leaves(*args))
        if not all(isinstance(a, torch.Tensor) for a in leaves):
            raise _graphed_error(
                "In the beta API, sample_args for each callable must contain only Tensors. Other types are not allowed."
            )
        flat_args.append(leaves)
    sample_args = tuple(a if isinstance(a, tuple) else (a,) for a in sample_args)
    params = [tuple(f.parameters()) if isinstance(f, torch.nn.Module) else () for f in callables]
    surfaces = [flat_args[i] + params[i] for i in range(len(callables))]
    mempool = graph_pool_handle() if pool is None else pool

    torch.npu.synchronize()
    with torch.npu.stream(torch.npu.Stream()):
        for function, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outputs = torch.utils._pytree.tree_leaves(function(*args))
                needing = tuple(o for o in outputs if o.requires_grad)
                if needing:
                    torch.autograd.grad(
                        outputs=needing,
                        inputs=tuple(i for i in surface if i.requires_grad),
                        grad_outputs=tuple(torch.empty_like(o) for o in needing),
                        only_inputs=True,
                        allow_unused=allow_unused_input,
                    )
            del outputs
    torch.npu.synchronize()

    # Forward graphs in call order, backward graphs in reverse: the order they replay in.
    forward_graphs, static_outputs, specs = [], [], []
    for function, args in zip(callables, sample_args):
        forward_graph = NPUGraph()
        with graph(forward_graph, pool=mempool):
            outputs = function(*args)
        flat, spec = tree_flatten(outputs)
        forward_graphs.append(forward_graph)
        static_outputs.append(tuple(flat))
        specs.append(spec)
    backward_graphs, static_grad_outputs, static_grad_inputs = [], [], []
    for surface, outputs in zip(reversed(surfaces), reversed(static_outputs)):
        grad_outputs = tuple(torch.empty_like(o) if o.requires_grad else None for o in outputs)
        needing = tuple(o for o in outputs if o.requires_grad)
        backward_graph = NPUGraph()
        grads = None
        if needing:
            with graph(backward_graph, pool=mempool):
                grads = torch.autograd.grad(
                    outputs=needing,
                    inputs=tuple(i for i in surface if i.requires_grad),
                    grad_outputs=tuple(g for g in grad_outputs if g is not None),
                    only_inputs=True,
                    allow_unused=allow_unused_input,
                )
        grad_inputs, index = [], 0
        for tensor in surface:
            if tensor.requires_grad and grads is not None:
                grad_inputs.append(grads[index])
                index += 1
            else:
                grad_inputs.append(None)
        backward_graphs.append(backward_graph)
        static_grad_outputs.append(grad_outputs)
        static_grad_inputs.append(tuple(grad_inputs))
    backward_graphs.reverse()
    static_grad_outputs.reverse()
    static_grad_inputs.reverse()

    graphed = []
    for i, function in enumerate(callables):
        run = _graphed_function(
            forward_graphs[i], backward_graphs[i], params[i], len(flat_args[i]), specs[i], surfaces[i],
            static_outputs[i], static_grad_outputs[i], static_grad_inputs[i],
        )
        if isinstance(function, torch.nn.Module):
            function.forward = _graphed_forward(function, function.training, run, function.forward)
            graphed.append(function)
        else:
            graphed.append(run)
    return graphed[0] if single else tuple(graphed)


def _graphed_function(forward_graph, backward_graph, module_params, user_count, spec, surface, outputs,
                      grad_outputs, grad_inputs):
    # The gradients backward returns are views of the graph's memory that this closure keeps a
    # reference to: autograd then copies them into ``.grad`` instead of adopting the buffer that
    # the next replay overwrites, so gradients accumulate over steps as in eager mode.
    returned_grads = tuple(g.detach() if g is not None else None for g in grad_inputs)

    class Graphed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(user_count):
                if surface[i].data_ptr() != inputs[i].data_ptr():
                    surface[i].copy_(inputs[i])
            forward_graph.replay()
            return tuple(o.detach() for o in outputs)

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, *grads):
            if len(grads) != len(grad_outputs):
                raise _graphed_error(
                    f"graphed callable: {len(grads)} gradients for {len(grad_outputs)} outputs"
                )
            for static, grad in zip(grad_outputs, grads):
                if static is not None and grad is not None and static.data_ptr() != grad.data_ptr():
                    static.copy_(grad)
            backward_graph.replay()
            return returned_grads

    def functionalized(*user_args):
        leaves = tuple(torch.utils._pytree.arg_tree_leaves(*user_args))
        if len(leaves) != user_count:
            raise _graphed_error(f"graphed callable expects {user_count} tensor arguments, got {len(leaves)}")
        result = Graphed.apply(*(leaves + module_params))
        return torch.utils._pytree.tree_unflatten(result, spec)

    functionalized.forward_graph = forward_graph
    functionalized.backward_graph = backward_graph
    return functionalized


def _graphed_forward(module, training: bool, run, original):
    def forward(*args, **kwargs):
        # The graphs hold the mode they were captured in; the other mode runs eagerly.
        if module.training == training:
            return run(*args, **kwargs)
        return original(*args, **kwargs)

    forward.forward_graph = run.forward_graph
    forward.backward_graph = run.backward_graph
    return forward
