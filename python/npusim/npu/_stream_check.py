"""``torch.npu._stream_check``: the stream checks of torch_npu's NPU sanitizer.

Two kinds of mistakes in multi-stream programs are found here, on top of PyTorch's CUDA
sanitizer (``torch.cuda._sanitizer``), whose bookkeeping of streams, events and accesses is
device-neutral:

- **Data races** (found when a kernel is launched): :class:`NPUSanitizerDispatchMode` sees every
  operator, collects the npu tensors it reads and writes from the operator's schema, and asks
  the event handler whether the access is ordered after the previous conflicting access on
  another stream; an unordered one raises ``CUDASanitizerErrors``.
- **A missing ``record_stream``** (found when the memory is freed, or on
  :meth:`NPURecordStreamHandler.flush_record_stream_warnings`): a tensor used on a stream other
  than the one it was allocated on needs ``tensor.record_stream(usage_stream)``, unless the
  allocation stream waited for that use before the free (``wait_stream``, ``wait_event`` on an
  event recorded after the use, or a device synchronization); otherwise the caching allocator
  may hand the memory out again while the other stream still uses it.

Tracked memory is named by its storage's start address, as the allocator's trace reports it.
``torch.npu._sanitizer`` enables both and connects them to the device's trace.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import sys
import textwrap
import traceback
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.cuda._sanitizer as csan
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "CrossStreamUsage",
    "NPUTensorInfo",
    "MissingRecordStreamError",
    "NPURecordStreamHandler",
    "NPUArgumentHandler",
    "NPUSanitizerDispatchMode",
]

logger = logging.getLogger(__name__)

# Factories whose tensor arguments give only metadata (new_empty, empty_like, ...).
FACTORY_FUNCTION_REGEX = re.compile("(new_.*|.*_like)")


def _current_stack() -> traceback.StackSummary:
    stack = traceback.StackSummary.extract(traceback.walk_stack(inspect.currentframe()), lookup_lines=False)
    stack.reverse()  # walk_stack goes from the innermost frame outwards
    return stack


def _current_npu_stream() -> int:
    # Looked up on the package at each call (torch_npu.npu is this package, so a patch of
    # torch_npu.npu.current_stream is seen here).
    import npusim.npu as npu

    return int(npu.current_stream().npu_stream)


@dataclass
class CrossStreamUsage:
    """The last use of a tensor on one stream other than its allocation stream."""

    usage_stream: csan.StreamId
    seq_num: csan.SeqNum
    operator: str
    stack_trace: traceback.StackSummary


@dataclass
class NPUTensorInfo:
    """Where a block of memory was allocated, which streams were recorded on it and where else it
    was used (kept apart from the data-race bookkeeping of the base handler)."""

    allocation_stream: Optional[csan.StreamId] = None
    allocation_stack_trace: Optional[traceback.StackSummary] = None
    recorded_streams: set = field(default_factory=set)
    cross_stream_usages: dict = field(default_factory=dict)


class MissingRecordStreamError(csan.SynchronizationError):
    """A tensor was used on another stream without ``record_stream`` and without the allocation
    stream waiting for that use before the memory was freed."""

    def __init__(self, data_ptr, allocation_stack_trace, allocation_stream, usage_stream, usage, recorded_streams):
        self.data_ptr = data_ptr
        self.allocation_stack_trace = allocation_stack_trace
        self.allocation_stream = allocation_stream
        self.usage_stream = usage_stream
        self.usage = usage
        self.recorded_streams = recorded_streams

    def __repr__(self):
        return (
            f"MissingRecordStreamError(data_ptr={self.data_ptr}, alloc_stream={self.allocation_stream}, "
            f"usage_stream={self.usage_stream}, operator='{self.usage.operator}')"
        )

    def __str__(self):
        message = textwrap.dedent(
            f"""\
            ============================
            NPUSanitizer: missing record_stream detected!
            Tensor (data ptr: {self.data_ptr}) allocated on stream {self.allocation_stream}
            was used on stream {self.usage_stream} without record_stream or
            creation_stream.wait_stream(usage_stream).

            This may cause use-after-free if the caching allocator reuses memory
            on the allocation stream before the usage stream finishes.

            Fix with ONE of:
              A) tensor.record_stream(stream) — tell allocator about the usage
              B) creation_stream.wait_stream(usage_stream) before deallocation

            Cross-stream usage during kernel:
              {self.usage.operator}
            """
        )
        message += f"With stack trace:\n{''.join(self.usage.stack_trace.format())}\n"
        if self.recorded_streams:
            message += f"Streams recorded via record_stream: {self.recorded_streams}\n"
        else:
            message += "No streams were recorded via record_stream.\n"
        if self.allocation_stack_trace:
            message += f"Tensor was allocated with stack trace:\n{''.join(self.allocation_stack_trace.format())}"
        return message


class NPURecordStreamHandler(csan.EventHandler):
    """The CUDA sanitizer's event handler plus the ``record_stream`` check.

    The check runs when memory is freed (or on :meth:`flush_record_stream_warnings`), not when
    the other stream uses it: what matters is whether the allocation stream has waited for the
    use before the memory can be reused, and programs usually synchronize after launching.
    """

    def __init__(self) -> None:
        super().__init__()
        self._npu_tensors: dict = {}
        self.record_stream_errors: list = []

    def _handle_memory_allocation(self, data_ptr) -> None:
        super()._handle_memory_allocation(data_ptr)
        try:
            stack = self.tensors_accessed.get_allocation_stack_trace(data_ptr)
        except KeyError:
            stack = None
        try:
            stream = _current_npu_stream()
        except RuntimeError:
            stream = None
        self._npu_tensors[data_ptr] = NPUTensorInfo(allocation_stream=stream, allocation_stack_trace=stack)

    def _handle_memory_deallocation(self, data_ptr) -> None:
        if data_ptr in self._npu_tensors:
            for error in self._get_record_stream_errors(data_ptr):
                print(error, file=sys.stderr)
                self.record_stream_errors.append(error)
            del self._npu_tensors[data_ptr]
        super()._handle_memory_deallocation(data_ptr)

    def _handle_kernel_launch(
        self, stream, read_only, read_write, outputs, operator, tensor_aliases, storage_dataptrs_accessed=None
    ):
        errors = super()._handle_kernel_launch(stream, read_only, read_write, outputs, operator, tensor_aliases)
        # Storage start addresses match the allocator's trace; tensor addresses (views) may not.
        accessed = storage_dataptrs_accessed if storage_dataptrs_accessed is not None else (read_only | read_write)
        self._record_cross_stream_usage(stream, accessed, operator)
        return errors

    def _record_cross_stream_usage(self, stream, all_accessed, operator) -> None:
        """Remembers, per tensor and foreign stream, the latest use (its sequence number, so that a
        later check asks for a synchronization after it, not one inherited at stream creation)."""
        stack = None
        for data_ptr in all_accessed:
            info = self._npu_tensors.get(data_ptr)
            if info is None or info.allocation_stream is None or info.allocation_stream == stream:
                continue
            if stack is None:
                stack = _current_stack()  # once per launch, however many tensors it touches
            usage = info.cross_stream_usages.get(stream)
            if usage is None:
                info.cross_stream_usages[stream] = CrossStreamUsage(stream, self.seq_num, operator, stack)
            else:
                usage.seq_num = self.seq_num
                usage.operator = operator
                usage.stack_trace = stack

    def _get_record_stream_errors(self, data_ptr) -> list:
        info = self._npu_tensors.get(data_ptr)
        if info is None or info.allocation_stream is None:
            return []
        errors = []
        for usage_stream, usage in info.cross_stream_usages.items():
            if usage_stream in info.recorded_streams:
                continue
            if self._is_creation_stream_synced_to_usage(info.allocation_stream, usage_stream, usage.seq_num):
                continue
            errors.append(
                MissingRecordStreamError(
                    data_ptr=data_ptr,
                    allocation_stack_trace=info.allocation_stack_trace,
                    allocation_stream=info.allocation_stream,
                    usage_stream=usage_stream,
                    usage=usage,
                    recorded_streams=set(info.recorded_streams),
                )
            )
        return errors

    def flush_record_stream_warnings(self) -> list:
        """Checks every tracked tensor now; prints each missing ``record_stream`` to stderr, keeps
        it in ``record_stream_errors`` and returns the ones found by this call."""
        errors = []
        for data_ptr in list(self._npu_tensors):
            found = self._get_record_stream_errors(data_ptr)
            for error in found:
                print(error, file=sys.stderr)
            errors.extend(found)
        self.record_stream_errors.extend(errors)
        return errors

    def _is_creation_stream_synced_to_usage(self, creation_stream, usage_stream, usage_seq_num=0) -> bool:
        """Whether the allocation stream has waited for the usage stream's work up to the use.

        Sequence numbers of launches start at 1, and a new stream inherits a synchronization state
        of 0, so comparing with the use's number tells a real wait from an inherited one.
        """
        try:
            state = self.syncs.current_sync_states.get(creation_stream, {})
            return state.get(usage_stream, -1) >= usage_seq_num
        except (AttributeError, KeyError):
            return False

    def _handle_record_stream(self, data_ptr, stream) -> None:
        self._npu_tensors.setdefault(data_ptr, NPUTensorInfo()).recorded_streams.add(stream)

    def _handle_erase_stream(self, data_ptr, stream) -> None:
        """``erase_stream`` (a communication work no longer uses the stream) undoes a record."""
        info = self._npu_tensors.get(data_ptr)
        if info is not None:
            info.recorded_streams.discard(stream)


class NPUArgumentHandler:
    """Collects the npu memory one operator reads and writes, from its schema's alias markers."""

    def __init__(self):
        self.dataptrs_read: set = set()
        self.dataptrs_written: set = set()
        self.tensor_aliases: dict = {}
        self.outputs: set = set()
        self.storage_dataptrs_accessed: set = set()

    def _handle_argument(self, value, is_write, metadata_only, name=None, is_output=False) -> None:
        if not isinstance(value, torch.Tensor) or not value.is_npu:
            return
        if metadata_only:  # a view or a factory's template: no data is touched
            return
        # An empty tensor has no address; its identity stands in for one.
        data_ptr = value.data_ptr() or id(value)
        (self.dataptrs_written if is_write else self.dataptrs_read).add(data_ptr)
        self.tensor_aliases.setdefault(data_ptr, [])
        if name is not None:
            self.tensor_aliases[data_ptr].append(name)
        if is_output:
            self.outputs.add(data_ptr)
        try:
            storage_ptr = value.untyped_storage().data_ptr()
        except (RuntimeError, AttributeError):
            storage_ptr = 0
        if storage_ptr:
            self.storage_dataptrs_accessed.add(storage_ptr)

    def parse_inputs(self, schema, args, kwargs, *, is_factory: bool = False) -> None:
        for argument, value in csan.zip_arguments(schema, args, kwargs):
            alias = argument.alias_info
            is_write = alias is not None and alias.is_write
            metadata_only = is_factory or (alias is not None and not alias.is_write)
            pytree.tree_map_(
                functools.partial(self._handle_argument, is_write=is_write, name=argument.name,
                                  metadata_only=metadata_only),
                value,
            )

    def parse_outputs(self, schema, outputs, *, is_factory: bool = False) -> None:
        for result, value in zip(schema.returns, (outputs,)):
            metadata_only = result.alias_info is not None and not result.alias_info.is_write
            pytree.tree_map_(
                functools.partial(self._handle_argument, is_write=True, metadata_only=metadata_only, is_output=True),
                value,
            )


class NPUSanitizerDispatchMode(TorchDispatchMode):
    """Sees every operator: runs it, then reports its npu memory accesses to ``event_handler`` as
    one kernel launch on the current stream and raises on a data race."""

    def __init__(self, event_handler: csan.EventHandler):
        super().__init__()
        self.event_handler = event_handler
        self.args_handler = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        name = func.__name__ if hasattr(func, "__name__") else str(func)
        if "record_stream" in name:
            # The allocator's trace reports record_stream from every path (operator, guard,
            # collectives) with the storage's address; it is not a kernel launch.
            return func(*args, **kwargs)
        is_factory = bool(FACTORY_FUNCTION_REGEX.match(func._schema.name))
        self.args_handler = NPUArgumentHandler()
        self.parse_inputs(func._schema, args, kwargs, is_factory=is_factory)
        outputs = func(*args, **kwargs)
        self.parse_outputs(func._schema, outputs, is_factory=is_factory)
        handler = self.args_handler
        if not (handler.dataptrs_read or handler.dataptrs_written or handler.outputs
                or handler.storage_dataptrs_accessed):
            return outputs
        try:
            stream = _current_npu_stream()
        except RuntimeError:
            logger.info("Failed to get current stream, ignore this kernel launch record.", exc_info=True)
            return outputs
        self.check_errors(func, stream)
        return outputs

    def parse_inputs(self, schema, args, kwargs, is_factory=False):
        self.args_handler.parse_inputs(schema, args, kwargs, is_factory=is_factory)

    def parse_outputs(self, schema, outputs, is_factory=False):
        self.args_handler.parse_outputs(schema, outputs, is_factory=is_factory)

    def check_errors(self, func, npu_stream):
        handler = self.args_handler
        errors = self.event_handler._handle_kernel_launch(
            npu_stream,
            handler.dataptrs_read - handler.dataptrs_written,
            handler.dataptrs_written,
            handler.outputs,
            str(func._schema),
            handler.tensor_aliases,
            storage_dataptrs_accessed=handler.storage_dataptrs_accessed,
        )
        if errors:
            for error in errors:
                print(error, file=sys.stderr)
            raise csan.CUDASanitizerErrors(errors)
