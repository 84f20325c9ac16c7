"""One process, both faces: libascendcl loaded next to npusim's PyTorch backend shares its
runtime (libnpusim_runtime.so): the same devices, device memory and simulated timeline."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
import torch

import npusim  # noqa: F401  (registers the npu device)
from npusim_tools.cann_home import cann_home

ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_HBM_MEM = 1


@pytest.fixture(scope="module")
def acl() -> ctypes.CDLL:
    library = ctypes.CDLL(str(Path(cann_home()) / "lib64" / "libascendcl.so"))
    library.aclrtMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    library.aclrtMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                         ctypes.c_int, ctypes.c_void_p]
    library.aclrtSynchronizeStream.argtypes = [ctypes.c_void_p]
    library.aclrtGetMemInfo.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    library.aclrtGetDevice.argtypes = [ctypes.POINTER(ctypes.c_int32)]
    return library


def test_acl_copies_an_npu_tensor_in_place(acl: ctypes.CDLL):
    tensor = torch.arange(16, dtype=torch.float32, device="npu")
    host = (ctypes.c_float * 16)()
    # The thread's device was initialised by PyTorch: acl uses its default context.
    assert acl.aclrtMemcpy(ctypes.addressof(host), 64, tensor.data_ptr(), 64, ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert list(host) == list(range(16))
    for i in range(16):
        host[i] = -float(i)
    stream = torch.npu.current_stream()
    assert acl.aclrtMemcpyAsync(tensor.data_ptr(), 64, ctypes.addressof(host), 64, ACL_MEMCPY_HOST_TO_DEVICE,
                                stream.npu_stream) == 0
    assert acl.aclrtSynchronizeStream(stream.npu_stream) == 0
    assert torch.equal(tensor.cpu(), -torch.arange(16, dtype=torch.float32))


def test_acl_sees_the_memory_pytorch_holds(acl: ctypes.CDLL):
    device = ctypes.c_int32(-1)
    assert acl.aclrtGetDevice(ctypes.byref(device)) == 0
    assert device.value == torch.npu.current_device()
    # Earlier tests in this process may leave cached blocks that would serve the allocation below
    # without a new segment: start from an empty cache.
    torch.npu.synchronize()
    torch.npu.empty_cache()
    free_before, total = ctypes.c_size_t(), ctypes.c_size_t()
    assert acl.aclrtGetMemInfo(ACL_HBM_MEM, ctypes.byref(free_before), ctypes.byref(total)) == 0
    held = torch.empty(64 << 20, dtype=torch.uint8, device="npu")
    free_after = ctypes.c_size_t()
    assert acl.aclrtGetMemInfo(ACL_HBM_MEM, ctypes.byref(free_after), ctypes.byref(total)) == 0
    # One runtime: the caching allocator's new segment is gone from the HBM that acl reports.
    assert free_before.value - free_after.value >= held.numel()
    assert total.value == torch.npu.get_device_properties(device.value).total_memory


def test_acl_copy_is_on_pytorch_timeline(acl: ctypes.CDLL):
    source = torch.empty(64 << 20, dtype=torch.uint8).pin_memory()
    target = torch.empty(64 << 20, dtype=torch.uint8, device="npu")
    stream = torch.npu.current_stream()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    assert acl.aclrtMemcpyAsync(target.data_ptr(), target.numel(), source.data_ptr(), source.numel(),
                                ACL_MEMCPY_HOST_TO_DEVICE, stream.npu_stream) == 0
    end.record()
    end.synchronize()
    acl_ms = start.elapsed_time(end)
    start.record()
    target.copy_(source, non_blocking=True)
    end.record()
    end.synchronize()
    torch_ms = start.elapsed_time(end)
    # The same 64 MiB pinned copy costs the same simulated time from either face.
    assert acl_ms > 0.5
    assert acl_ms == pytest.approx(torch_ms, rel=0.05)
