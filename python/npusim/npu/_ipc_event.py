"""The shared state behind ``torch.npu.Event(interprocess=True)``: what ``ipc_handle()`` names.

A real event handle names a device object that every process of the machine sees. npusim's
devices live inside each process, so the shared part is a small block of shared memory (a file
in ``/dev/shm``) that the recording process updates and any process that opened the handle reads:

- ``recorded``: how many times the event was recorded, in any process;
- ``completed``: how many of those records have completed;
- ``device``: the device the event belongs to.

The device work that precedes a record has already been executed by the host when ``record()``
returns (npusim runs kernels synchronously and models only their timing), so a record is
complete for every other process as soon as it is published. Simulated time is per process and
is not shared: waiting on an imported event does not move the waiter's simulated clock.
"""

from __future__ import annotations

import mmap
import os
import secrets
import struct
import time

_DIRECTORY = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
_PREFIX = b"npusim-ipc-event:"
_HANDLE_SIZE = 64  # the size of an ACL IPC event handle
_MAGIC = 0x4E505553494D4556  # "NPUSIMEV"
# magic, recorded, completed, device, creator pid
_LAYOUT = struct.Struct("<QQQqq")
_SIZE = 64


class SharedEventState:
    """One interprocess event's shared block, created by the exporting process or opened from a
    handle by another one."""

    def __init__(self, path: str, buffer: mmap.mmap, owner: bool):
        self.path = path
        self._buffer = buffer
        self._owner = owner

    @classmethod
    def create(cls, device: int) -> "SharedEventState":
        token = secrets.token_hex(16)
        path = os.path.join(_DIRECTORY, f"npusim-event-{token}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, _SIZE)
            buffer = mmap.mmap(fd, _SIZE)
        finally:
            os.close(fd)
        _LAYOUT.pack_into(buffer, 0, _MAGIC, 0, 0, device, os.getpid())
        return cls(path, buffer, owner=True)

    @classmethod
    def open(cls, handle: bytes) -> "SharedEventState":
        if not isinstance(handle, (bytes, bytearray)) or not bytes(handle).startswith(_PREFIX):
            raise RuntimeError("Invalid npu event IPC handle: it was not made by torch.npu.Event.ipc_handle()")
        token = bytes(handle)[len(_PREFIX):].rstrip(b"\0").decode("ascii", "replace")
        if not token.isalnum():
            raise RuntimeError("Invalid npu event IPC handle: malformed")
        path = os.path.join(_DIRECTORY, f"npusim-event-{token}")
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise RuntimeError(
                "Invalid npu event IPC handle: the event no longer exists (its creating process "
                "released it)"
            ) from None
        try:
            if os.fstat(fd).st_size < _SIZE:
                raise RuntimeError("Invalid npu event IPC handle: the shared event state is truncated")
            buffer = mmap.mmap(fd, _SIZE)
        finally:
            os.close(fd)
        if _LAYOUT.unpack_from(buffer, 0)[0] != _MAGIC:
            buffer.close()
            raise RuntimeError("Invalid npu event IPC handle: not an npusim event")
        return cls(path, buffer, owner=False)

    def handle(self) -> bytes:
        token = os.path.basename(self.path)[len("npusim-event-"):].encode("ascii")
        return (_PREFIX + token).ljust(_HANDLE_SIZE, b"\0")

    @property
    def device(self) -> int:
        return _LAYOUT.unpack_from(self._buffer, 0)[3]

    def _counts(self) -> tuple[int, int]:
        _, recorded, completed, _, _ = _LAYOUT.unpack_from(self._buffer, 0)
        return recorded, completed

    def publish_record(self) -> None:
        """A record in this process: the work before it has run, so it is complete at once.
        ``completed`` is written last: a reader never sees a record ahead of its completion."""
        recorded, _ = self._counts()
        struct.pack_into("<Q", self._buffer, 8, recorded + 1)
        struct.pack_into("<Q", self._buffer, 16, recorded + 1)

    def query(self) -> bool:
        recorded, completed = self._counts()
        return completed >= recorded

    def synchronize(self, timeout_s: float = 60.0) -> None:
        # A record being published by another process completes within microseconds; the bound
        # turns a broken peer into an error instead of a hang.
        deadline = time.monotonic() + timeout_s
        while not self.query():
            if time.monotonic() > deadline:
                raise RuntimeError("npu event IPC synchronize timed out: the recording process stopped mid-record")
            time.sleep(0.0005)

    def close(self) -> None:
        try:
            self._buffer.close()
        except (BufferError, ValueError):
            pass
        if self._owner:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
