"""The caching allocator through torch.npu (contract §4, §8)."""

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import run_python

DEVICE = 6  # a device the other tests leave alone
MiB = 1024 * 1024


@pytest.fixture()
def clean_device():
    torch.npu.empty_cache()
    torch.npu.reset_peak_memory_stats(DEVICE)
    yield DEVICE
    torch.npu.empty_cache()


def test_allocated_and_reserved(clean_device):
    before = torch.npu.memory_allocated(DEVICE)
    x = torch.empty(4 * MiB, dtype=torch.uint8, device=f"npu:{DEVICE}")
    assert torch.npu.memory_allocated(DEVICE) - before >= 4 * MiB
    assert torch.npu.memory_reserved(DEVICE) >= torch.npu.memory_allocated(DEVICE)
    assert torch.npu.max_memory_allocated(DEVICE) >= torch.npu.memory_allocated(DEVICE)
    assert torch.npu.max_memory_reserved(DEVICE) >= torch.npu.memory_reserved(DEVICE)
    del x
    assert torch.npu.memory_allocated(DEVICE) == before
    assert torch.npu.memory_reserved(DEVICE) > 0  # cached
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved(DEVICE) < 4 * MiB


def test_peak_reset(clean_device):
    x = torch.empty(8 * MiB, dtype=torch.uint8, device=f"npu:{DEVICE}")
    del x
    assert torch.npu.max_memory_allocated(DEVICE) >= 8 * MiB
    torch.npu.reset_peak_memory_stats(DEVICE)
    assert torch.npu.max_memory_allocated(DEVICE) == torch.npu.memory_allocated(DEVICE)
    with pytest.warns(FutureWarning):
        torch.npu.reset_max_memory_allocated(DEVICE)


def test_memory_stats_keys(clean_device):
    x = torch.ones(100, device=f"npu:{DEVICE}")
    stats = torch.npu.memory_stats(DEVICE)
    for name in ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                 "active_bytes", "inactive_split_bytes", "requested_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for metric in ("current", "peak", "allocated", "freed"):
                assert isinstance(stats[f"{name}.{pool}.{metric}"], int)
    for name in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
                 "max_split_size", "oversize_allocations.current", "oversize_segments.peak"):
        assert name in stats
    assert list(stats) == sorted(stats)
    assert stats["allocated_bytes.all.current"] == torch.npu.memory_allocated(DEVICE)
    assert stats["allocated_bytes.small_pool.current"] > 0
    nested = torch.npu.memory_stats_as_nested_dict(DEVICE)
    assert nested["allocated_bytes"]["all"]["current"] == stats["allocated_bytes.all.current"]
    del x


def test_accumulated_reset(clean_device):
    x = torch.ones(10, device=f"npu:{DEVICE}")
    del x
    assert torch.npu.memory_stats(DEVICE)["allocation.all.allocated"] > 0
    torch.npu.reset_accumulated_memory_stats(DEVICE)
    assert torch.npu.memory_stats(DEVICE)["allocation.all.allocated"] == 0


def test_deprecated_names(clean_device):
    with pytest.warns(FutureWarning, match="memory_reserved"):
        assert torch.npu.memory_cached(DEVICE) == torch.npu.memory_reserved(DEVICE)
    with pytest.warns(FutureWarning, match="max_memory_reserved"):
        assert torch.npu.max_memory_cached(DEVICE) == torch.npu.max_memory_reserved(DEVICE)


def test_memory_summary(clean_device):
    x = torch.ones(3 * MiB, dtype=torch.uint8, device=f"npu:{DEVICE}")
    summary = torch.npu.memory_summary(DEVICE)
    lines = summary.splitlines()
    assert f"PyTorch NPU memory summary, device ID {DEVICE}" in lines[1]
    assert "NPU OOMs: 0" in lines[3] and "npuMalloc retries: 0" in lines[3]
    assert all(len(line) == 77 for line in lines), {len(line) for line in lines}
    for title in ("Allocated memory", "Active memory", "NPU reserved memory", "Non-releasable memory", "Allocations",
                  "Active allocs", "NPU reserved segments", "Non-releasable allocs", "from large pool"):
        assert title in summary
    short = torch.npu.memory_summary(device=DEVICE, abbreviated=True)
    assert "from large pool" not in short
    del x


def test_snapshot(clean_device):
    x = torch.ones(3 * MiB, dtype=torch.uint8, device=f"npu:{DEVICE}")
    segments = [s for s in torch.npu.memory_snapshot() if s["device"] == DEVICE]
    assert segments
    segment = segments[0]
    for key in ("address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                "segment_type", "blocks"):
        assert key in segment
    assert segment["segment_type"] in ("small", "large")
    assert any(block["state"] == "active_allocated" for s in segments for block in s["blocks"])
    del x


def test_memory_fraction(clean_device):
    assert torch.npu.get_per_process_memory_fraction(DEVICE) == 1.0
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5. Allowed range: 0~1"):
        torch.npu.set_per_process_memory_fraction(1.5, DEVICE)
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        torch.npu.set_per_process_memory_fraction(1, DEVICE)
    torch.npu.set_per_process_memory_fraction(0.5, DEVICE)
    try:
        assert torch.npu.get_per_process_memory_fraction(DEVICE) == 0.5
    finally:
        torch.npu.set_per_process_memory_fraction(1.0, DEVICE)


def test_mem_get_info(clean_device):
    free, total = torch.npu.mem_get_info(DEVICE)
    assert total == torch.npu.get_device_properties(DEVICE).total_memory
    x = torch.empty(4 * MiB, dtype=torch.uint8, device=f"npu:{DEVICE}")
    free_after, _ = torch.npu.mem_get_info(DEVICE)
    assert free_after <= free - 4 * MiB
    del x


def test_caching_allocator_alloc(clean_device):
    before = torch.npu.memory_allocated(DEVICE)
    pointer = torch.npu.caching_allocator_alloc(MiB, DEVICE)
    assert isinstance(pointer, int) and pointer != 0
    assert torch.npu.memory_allocated(DEVICE) >= before + MiB
    torch.npu.caching_allocator_delete(pointer)
    assert torch.npu.memory_allocated(DEVICE) == before
    side = torch.npu.Stream(device=DEVICE)
    pointer = torch.npu.caching_allocator_alloc(512, DEVICE, side)
    torch.npu.caching_allocator_delete(pointer)
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        torch.npu.caching_allocator_alloc(512, DEVICE, "stream")


def test_host_memory():
    stats = torch.npu.host_memory_stats()
    assert "allocated_bytes.current" in stats and "num_host_alloc" in stats
    pinned = torch.ones(1024).pin_memory()
    assert pinned.is_pinned()
    del pinned
    torch.npu.host_empty_cache()


def test_statistics_of_a_device_that_does_not_exist_name_the_argument(clean_device):
    """torch_npu's caching allocator checks the device before anything else (assertValidDevice)."""
    bad = torch.npu.device_count() + 1
    for read in (torch.npu.memory_allocated, torch.npu.max_memory_allocated, torch.npu.memory_reserved,
                 torch.npu.memory_stats, torch.npu.reset_peak_memory_stats):
        with pytest.raises(RuntimeError, match=f"Invalid device argument {bad}: did you call init\\?"):
            read(device=f"npu:{bad}")


def test_empty_virt_addr_cache_drops_reserved_memory_but_keeps_the_physical_pages_until_empty_cache():
    result = run_python(
        """
        import torch, npusim
        x = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, device="npu")
        free_with_x = torch.npu.mem_get_info()[0]
        del x
        reserved = torch.npu.memory_reserved()
        torch.npu.empty_virt_addr_cache()
        print(reserved > 0, torch.npu.memory_reserved(), torch.npu.max_memory_reserved() == reserved)
        print(torch.npu.mem_get_info()[0] == free_with_x)  # the physical memory is still taken
        torch.npu.empty_cache()
        print(torch.npu.mem_get_info()[0] > free_with_x)
        """,
        {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "0", "True", "True", "True"], result.stdout


def test_empty_virt_addr_cache_needs_expandable_segments():
    torch.ones(1, device="npu")
    with pytest.raises(RuntimeError, match="Unsupported config for empty_virt_addr_cache, please enable expandable_segments."):
        torch.npu.empty_virt_addr_cache()
