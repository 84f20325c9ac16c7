"""The NPUGraph capture in progress, shared by the graph modules.

One capture at a time (the "global" capture mode of the chip). It lives in its own module so
that what a capture records besides operators (ExternalEvent waits, task groups) can find the
capture without importing the graph itself (``npusim.compile.graphs`` imports them).
"""

from __future__ import annotations

import threading
from typing import Any

import torch

# The capture in progress: the autograd device thread must see the capture its backward belongs
# to, so this is process-wide, not thread-local.
active: Any = None
lock = threading.Lock()


def capturing_on(stream: Any) -> Any:
    """The capture that records ``stream``'s work, or None when ``stream`` is not capturing."""
    capture = active
    if capture is None or stream is None:
        return None
    return capture if stream == capture._stream else None


def current_capture() -> Any:
    """The capture that records the current stream's work, or None."""
    capture = active
    if capture is None:
        return None
    return capture if torch.npu.current_stream() == capture._stream else None
