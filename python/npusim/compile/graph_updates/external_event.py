"""``torch.npu.ExternalEvent``: an event that a stream may wait on before it is recorded.

torch_npu's external events (``graph_external=True``) tie an NPUGraph to work outside it: a
graph captures ``event.wait(stream)`` (and ``event.reset(stream)``) as nodes, and every replay
then holds its later kernels until someone records the event, typically the stream that updated
the graph's task groups (``graph_task_update_begin`` ... ``graph_task_update_end``, then
``event.record(update_stream)``). A reset clears the flag again, so that the next replay waits
for the next record.

In npusim a replay runs on the host when it is called, so a wait node cannot block: at replay it
makes the replaying stream wait for the event's last record on the simulated timeline, and a
wait on an event that nobody recorded since its last reset raises the error the chip's replay
would hang on instead. Outside a capture, ``wait`` orders the stream after the last record, if
there is one (a record that comes later has nothing left to order here: the waiting stream's
work has already run on the host).
"""

from __future__ import annotations

import torch

from npusim._error_code import ErrCode, SubModule, error_suffix
from npusim.compile import graph_capture_state

__all__ = ["ExternalEvent"]


class ExternalEvent:
    r"""An NPU event that may be waited on before it is recorded (torch_npu's ExternalEvent).
    Reset it before reusing it."""

    def __init__(self) -> None:
        self._event = None  # the timeline event of the last record (created on the first one)
        self._signaled = False

    def _stream(self, stream):
        return torch.npu.current_stream() if stream is None else stream

    def record(self, stream=None) -> None:
        r"""Records the event in ``stream`` (the current stream by default)."""
        stream = self._stream(stream)
        capture = graph_capture_state.capturing_on(stream)
        if capture is not None:
            capture.append_step(_ExternalEventStep(self, "record"))
            return
        self._record_now(stream)

    def wait(self, stream=None) -> None:
        r"""Makes all later work of ``stream`` (the current stream by default) wait for this event."""
        stream = self._stream(stream)
        capture = graph_capture_state.capturing_on(stream)
        if capture is not None:
            capture.append_step(_ExternalEventStep(self, "wait"))
            return
        if self._signaled and self._event is not None:
            stream.wait_event(self._event)

    def reset(self, stream=None) -> None:
        r"""Clears the event's flag (the work of ``stream`` that waited on it must be done)."""
        stream = self._stream(stream)
        capture = graph_capture_state.capturing_on(stream)
        if capture is not None:
            capture.append_step(_ExternalEventStep(self, "reset"))
            return
        self._signaled = False

    def query(self) -> bool:
        r"""Whether the event was recorded (since its last reset) and its work is done."""
        return self._signaled and (self._event is None or self._event.query())

    @property
    def npu_event(self) -> int:
        return 0 if self._event is None else self._event.npu_event

    def _record_now(self, stream) -> None:
        if self._event is None:
            self._event = torch.npu.Event()
        self._event.record(stream)
        self._signaled = True

    def _wait_at_replay(self) -> None:
        if not self._signaled:
            raise RuntimeError(
                "NPUGraph replay waits on an ExternalEvent that was not recorded since it was last reset: on "
                "the device the replay would wait forever. Record the event (after updating the graph's task "
                "groups, e.g. NPUGraph.update(...)) before each replay." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        if self._event is not None:
            torch.npu.current_stream().wait_event(self._event)

    def __repr__(self) -> str:
        if self._event is not None:
            return f"<torch_npu.npu.ExternalEvent {self.npu_event:#x}>"
        return "<torch_npu.npu.ExternalEvent uninitialized>"


class _ExternalEventStep:
    """A wait, reset or record node of a captured graph; replay performs it in order."""

    __slots__ = ("event", "action", "replay")

    def __init__(self, event: ExternalEvent, action: str) -> None:
        self.event, self.action, self.replay = event, action, None

    @property
    def name(self) -> str:
        return f"ExternalEvent.{self.action}"

    def plan(self, device: int) -> str:
        event = self.event
        if self.action == "wait":
            self.replay = event._wait_at_replay
        elif self.action == "reset":
            def reset() -> None:
                event._signaled = False

            self.replay = reset
        else:
            self.replay = lambda: event._record_now(torch.npu.current_stream())
        return "external event " + self.action
