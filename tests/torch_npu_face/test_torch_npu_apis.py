"""torch_npu.utils, torch_npu._C, allocator controls, npurt, _memory_viz (issue 10)."""

from __future__ import annotations

import pytest
import torch

import npusim  # noqa: F401
import torch_npu
from npusim_testing.fresh_process import run_python


def test_combine_tensors():
    from torch_npu.utils import get_part_combined_tensor, is_combined_tensor_valid, npu_combine_tensors

    params = [torch.randn(3, 4).npu(), torch.randn(5).npu()]
    values = [p.cpu() for p in params]
    combined = npu_combine_tensors(params)
    assert combined.numel() == 17 and torch_npu.get_storage_size(combined) == 17
    assert torch.equal(combined[:12].cpu(), values[0].flatten()) and torch.equal(combined[12:].cpu(), values[1])
    assert all(torch.equal(p.cpu(), v) for p, v in zip(params, values))
    combined.mul_(2)  # one kernel updates every tensor
    assert torch.equal(params[1].cpu(), values[1] * 2)
    assert is_combined_tensor_valid(combined, params)
    assert not is_combined_tensor_valid(combined, [torch.ones(2, device="npu")])
    part = get_part_combined_tensor(combined, 12, 5)
    assert torch.equal(part.cpu(), params[1].cpu())
    with pytest.raises(RuntimeError, match=r"\(index \+ size\) \(18\) > torch_npu.get_storage_size"):
        get_part_combined_tensor(combined, 13, 5)
    with pytest.raises(RuntimeError, match="Tensors to combine must have the same dtype."):
        npu_combine_tensors([torch.ones(2, device="npu"), torch.ones(2, device="npu", dtype=torch.int32)])
    with pytest.raises(RuntimeError, match="Tensors to combine must be on NPU, got cpu."):
        npu_combine_tensors([torch.ones(2)])
    assert npu_combine_tensors([]) is None


def test_c_functions():
    C = torch_npu._C
    assert C._npu_getDeviceCount() == torch.npu.device_count()
    C._npu_setDevice(0)
    assert C._npu_getDevice() == 0 and C._npu_getLocalDevice() == 0
    C._npu_synchronize()
    stream = C._npu_getCurrentStream(0)
    assert stream == (torch.npu.current_stream().stream_id, 0, torch.npu.current_stream().device_type)
    assert C._npu_getDefaultStream(0)[0] == torch.npu.default_stream().stream_id
    assert C._get_cann_version("CANN") == "9.1.0" and C._is_gte_cann_version("8.5.0", "CANN")
    assert C._npu_get_soc_version() == 221
    memories = C._npu_getDeviceMemories(0)
    assert (memories.free_memory, memories.total_memory) == torch.npu.mem_get_info(0)
    assert C._npu_is_jit_compile_false() is True
    C._npu_set_sync_debug_mode(0)
    assert C._npu_get_sync_debug_mode() == 0
    with pytest.raises(TypeError, match="option value is nullptr or is not string."):
        C._npu_setOption({"jitCompile": 1})
    with pytest.raises(AttributeError, match="npusim does not provide this torch_npu binding"):
        C._no_such_binding  # noqa: B018


def test_mem_pool():
    pool = torch.npu.MemPool()
    assert isinstance(pool.id, tuple) and pool.use_count() == 1
    with torch.npu.use_mem_pool(pool):
        assert pool.use_count() == 2
        x = torch.ones(1024, device="npu")
    assert pool.use_count() == 1 and x.sum().item() == 1024
    assert torch.npu.memory.MemPool is torch.npu.MemPool
    assert isinstance(pool.snapshot(), list)
    with pytest.raises(TypeError, match="pool must be a torch.npu.MemPool"):
        with torch.npu.use_mem_pool(object()):
            pass


def _still_active_after_free(erase: bool) -> bool:
    torch.npu.synchronize()
    side = torch.npu.Stream()
    x = torch.empty(1 << 20, dtype=torch.uint8, device="npu")
    big = torch.zeros(1 << 25, device="npu")
    with torch.npu.stream(side):
        big.add_(1)  # 256 MB of traffic: the side stream stays busy for a while of simulated time
    x.record_stream(side)
    if erase:
        torch.npu.erase_stream(x, side)
    before = torch.npu.memory_stats()["active.all.current"]
    del x
    after = torch.npu.memory_stats()["active.all.current"]
    torch.npu.synchronize()
    return after == before


def test_erase_stream_releases_the_block_at_once():
    assert _still_active_after_free(erase=False)  # record_stream: the block waits for the side stream
    assert not _still_active_after_free(erase=True)
    with pytest.raises(TypeError, match="stream should be torch_npu.npu.Stream"):
        torch.npu.erase_stream(torch.ones(1, device="npu"), "stream")


def test_empty_with_swapped_memory():
    before = torch.npu.memory_allocated()
    t = torch.npu.empty_with_swapped_memory((256, 256), dtype=torch.float32)
    assert t.device.type == "npu" and t.shape == (256, 256) and t.dtype == torch.float32
    assert torch.npu.memory_allocated() == before  # host memory, not HBM
    t.fill_(3.0)
    assert (t + 1).sum().item() == 4.0 * 256 * 256


def test_npurt_host_register():
    rt = torch.npu.npurt()
    host = torch.empty(1 << 16, dtype=torch.uint8)
    assert rt.npuHostRegister(host.data_ptr(), host.numel(), 0x2) == 0
    assert rt.npuHostRegister(host.data_ptr() + 16, 16, 0) == 107000  # overlaps
    assert rt.npuHostUnregister(host.data_ptr()) == 0
    assert rt.npuHostUnregister(host.data_ptr()) == 107000
    assert rt.npuHostRegister(0, 16, 0) == 107000


def test_memory_viz_module():
    import torch_npu.npu._memory_viz as viz

    assert callable(viz.segment_plot) and callable(viz.trace_plot)
    assert torch.npu._memory_viz is viz


def test_backends_module_and_soc_version():
    import torch_npu.npu.aclnn as aclnn
    import torch_npu.npu.backends as backends

    assert aclnn is torch.npu.aclnn and aclnn.allow_hf32 is True

    assert callable(backends.enable_flash_sdp) and callable(backends.sdp_kernel)
    assert torch.npu.get_soc_version() == 221
