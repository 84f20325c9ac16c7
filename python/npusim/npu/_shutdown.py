"""Keep PyTorch's autograd device workers from aborting the interpreter at exit.

By default the backward of npu operators runs on one autograd worker thread per device. A worker
releases its last reference to a finished graph task after ``backward()`` has returned to the
caller, and that graph task keeps the Python objects of the thread-local state at ``backward()``
(the torch function modes, such as the ``with torch.device("npu"):`` that npusim recommends for
estimate-only runs, and since PyTorch 2.13 the ``contextvars`` context that every Python
``backward()`` stashes in the thread-local state, so every graph task owns one). When the interpreter is already finalizing, that release cannot take the GIL:
CPython ends the worker with ``pthread_exit``, whose forced unwind meets a ``noexcept``
destructor, and the process aborts with "terminate called without an active exception" (about one
run in thirty of a short estimate-only training step).

Two measures:

- Inside ``npusim.estimate()`` backward passes run in the calling thread
  (``torch.autograd.set_multithreading_enabled(False)`` for the block, see ``estimate.py``).
  Turning that off for the whole importing thread stopped these aborts but made CPU programs that
  train with DDP over Gloo abort at exit in about one run in three, so it is limited to the block.
- Backward passes started by other threads still use the workers; at exit (``atexit`` runs while
  the interpreter is whole) npusim runs one scalar backward on every device whose worker has
  started, which a worker takes only after it dropped its previous task. That backward runs in
  C++ with the GIL released and with every Python-owned part of the thread-local state cleared
  (a Python ``backward()`` would stash a new context and recreate the race): its graph task and
  tensors own no Python object, so the worker may drop them during finalization.
"""

from __future__ import annotations

import atexit

import torch


def _drain_autograd_device_workers() -> None:
    try:
        from npusim import _C
        from npusim.npu._lazy import _is_in_bad_fork

        if _is_in_bad_fork():
            return
        _C._drain_autograd_device_threads()
    except Exception:
        # A process that cannot run the barrier (a broken configuration, a device error) exits
        # as before; the barrier only prevents an abort, it must not cause one.
        pass


atexit.register(_drain_autograd_device_workers)
