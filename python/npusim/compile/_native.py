"""ctypes access to ``libnpusim_compile.so`` (csrc/compile): prices of compiled kernels and
graph launches on the simulated timeline. Plain C entry points keep ATen out of the call."""

from __future__ import annotations

import ctypes
import os
from collections import defaultdict

_library: ctypes.CDLL | None = None

# kernel name -> [launches, modelled device ns], since the last reset (for the reports).
kernel_totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])


def _lib() -> ctypes.CDLL:
    global _library
    if _library is None:
        from npusim import _C  # noqa: F401  (the backend library must be loaded first)

        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libnpusim_compile.so")
        library = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        library.npusim_compile_charge_fused_kernel.restype = ctypes.c_uint64
        library.npusim_compile_charge_fused_kernel.argtypes = [
            ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_double
        ]
        library.npusim_compile_charge_graph_launch.restype = None
        library.npusim_compile_charge_graph_launch.argtypes = [ctypes.c_int]
        library.npusim_compile_set_replaying_graph.restype = None
        library.npusim_compile_set_replaying_graph.argtypes = [ctypes.c_int]
        library.npusim_compile_timing_snapshot.restype = None
        library.npusim_compile_timing_snapshot.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_double)]
        library.npusim_compile_charge_replayed_kernel.restype = ctypes.c_uint64
        library.npusim_compile_charge_replayed_kernel.argtypes = [
            ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_double
        ]
        library.npusim_compile_invalidate_storage.restype = None
        library.npusim_compile_invalidate_storage.argtypes = [ctypes.c_size_t, ctypes.c_char_p]
        _library = library
    return _library


_charge_fused = None


def charge_fused_kernel(device: int, name: str, read_bytes: int, written_bytes: int, elements: int) -> int:
    global _charge_fused
    if _charge_fused is None:
        _charge_fused = _lib().npusim_compile_charge_fused_kernel
    device_ns = _charge_fused(device, read_bytes, written_bytes, elements, 1.0)
    entry = kernel_totals[name]
    entry[0] += 1
    entry[1] += device_ns
    return device_ns


def fused_kernel_charger(device: int, read_bytes: int, written_bytes: int, elements: int):
    """A function of no arguments that charges one launch of a kernel whose traffic is known
    when its graph compiles, and returns its modelled device ns. The C arguments are built once
    here: converting five Python numbers on every launch cost half of a launch's charge."""
    function = _lib()["npusim_compile_charge_fused_kernel"]  # its own pointer: no argtypes to check
    function.restype = ctypes.c_uint64
    arguments = (
        ctypes.c_int(device),
        ctypes.c_double(read_bytes),
        ctypes.c_double(written_bytes),
        ctypes.c_double(elements),
        ctypes.c_double(1.0),
    )
    return lambda: function(*arguments)


def charge_graph_launch(device: int) -> None:
    _lib().npusim_compile_charge_graph_launch(device)


def set_replaying_graph(replaying: bool) -> None:
    _lib().npusim_compile_set_replaying_graph(1 if replaying else 0)


def load() -> None:
    """Load the library (its operators, torch.ops.npusim._graph_output_aliases, register then)."""
    _lib()


def invalidate_storage(storage_impl: int, message: str) -> None:
    """Every later access to the storage's data raises RuntimeError(message)."""
    _lib().npusim_compile_invalidate_storage(storage_impl, message.encode())


def reset_kernel_totals() -> None:
    kernel_totals.clear()


# perf::Unit order of the timing totals.
UNITS = 6


def timing_snapshot() -> tuple[tuple[int, ...], float]:
    """(device ns charged so far by unit, cube FLOPs so far)."""
    by_unit = (ctypes.c_uint64 * UNITS)()
    flops = ctypes.c_double()
    _lib().npusim_compile_timing_snapshot(by_unit, ctypes.byref(flops))
    return tuple(by_unit), flops.value


def charge_replayed_kernel(device: int, unit: int, device_ns: int, cube_flops: float) -> None:
    _lib().npusim_compile_charge_replayed_kernel(device, unit, device_ns, cube_flops)
