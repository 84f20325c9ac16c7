"""Smaller parts of torch_npu's surface that its own tests at the 2.13 tag check: the module
that public names report, the FFT plan cache controls, save_async, Event.recorded_time,
npurt's host-register flags, torch.npu.synchronize under the sync debug mode, and zero-size
frees under the memory profiler."""

from __future__ import annotations

import glob
import io
import textwrap
import time

import pytest
import torch

import torch_npu
from npusim_testing.fresh_process import run_python


# ------------------------------------------------------------------ public names


@pytest.mark.parametrize(
    "name, module",
    [
        ("torch_npu.distributed.is_hccl_available", "torch_npu.distributed"),
        ("torch_npu.npu_format_cast", "torch_npu"),
        ("torch_npu.get_npu_format", "torch_npu"),
        ("torch_npu.empty_with_format", "torch_npu"),
        ("torch_npu.empty_with_swapped_memory", "torch_npu"),
        ("torch_npu.Format", "torch_npu"),
        ("torch_npu.utils.save_async", "torch_npu.utils"),
        ("torch_npu.profiler.profile", "torch_npu.profiler"),
    ],
)
def test_public_names_report_the_torch_npu_module(name, module):
    import torch_npu.distributed  # noqa: F401

    obj = torch_npu
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    assert obj.__module__.startswith(module), (name, obj.__module__)


def test_public_function_copies_keep_behaviour_and_docstring():
    import torch_npu.distributed
    from npusim.distributed import is_hccl_available as original

    exposed = torch_npu.distributed.is_hccl_available
    assert exposed is not original
    assert exposed() == original()
    assert exposed.__doc__ == original.__doc__
    assert original.__module__.startswith("npusim")


# ------------------------------------------------------------------ FFT plan cache


def test_fft_plan_cache_counts_plans_and_checks_its_attributes():
    cache = torch.npu.backends.fft_plan_cache
    saved = cache.max_size
    try:
        cache.clear()
        assert cache.size == 0
        torch.fft.ifft(torch.randn(1, 7, dtype=torch.complex64).npu())
        assert cache.size == 1
        torch.fft.ifft(torch.randn(1, 7, dtype=torch.complex64).npu())
        assert cache.size == 1  # the same plan again
        torch.fft.fft(torch.randn(3, 9, dtype=torch.complex64).npu())
        assert cache.size == 2
        cache.max_size = 1
        assert cache.max_size == 1 and cache.size == 1
        with pytest.raises(RuntimeError, match="read-only"):
            cache.size = 1
        with pytest.raises(AttributeError):
            cache.unknown
        cache.clear()
        assert cache.size == 0
    finally:
        cache.max_size = saved


# ------------------------------------------------------------------ save_async


def test_save_async_writes_what_torch_load_reads(tmp_path):
    tensor = torch.arange(12.0).reshape(3, 4).npu()
    target = tmp_path / "saved.pt"
    torch_npu.utils.save_async({"t": tensor}, str(target))
    loaded = None
    for _ in range(400):
        try:
            loaded = torch.load(str(target))
            break
        except Exception:
            time.sleep(0.05)
    assert loaded is not None, "save_async wrote nothing readable"
    assert torch.equal(loaded["t"].cpu(), torch.arange(12.0).reshape(3, 4))
    assert loaded["t"].device.type == "npu"


def test_save_async_refuses_the_legacy_format():
    with pytest.raises(RuntimeError, match="_use_new_zipfile_serialization = False"):
        torch_npu.utils.save_async(torch.ones(2).npu(), io.BytesIO(), _use_new_zipfile_serialization=False)


# ------------------------------------------------------------------ Event.recorded_time


def test_event_recorded_time_grows_with_the_work_between_events():
    stream = torch.npu.current_stream()
    first = torch.npu.Event()
    second = torch.npu.Event()
    first.record(stream)
    x = torch.randn(512, 512, device="npu")
    for _ in range(4):
        x = x @ x
    second.record(stream)
    t1, t2 = first.recorded_time(), second.recorded_time()
    assert isinstance(t1, int) and t2 > t1 >= 0


# ------------------------------------------------------------------ npurt host register flags


def test_npurt_registers_plain_host_memory_only_as_pinned():
    runtime = torch_npu.npu.npurt()
    assert runtime is torch_npu.npu.npurt()
    pinned, mapped = 0x10000000, 0x2
    shared = torch.empty(4096, dtype=torch.uint8).share_memory_()
    for flag in (pinned, mapped, pinned | mapped):
        assert runtime.npuHostRegister(shared.data_ptr(), 4096, flag) == 0
        assert runtime.npuHostUnregister(shared.data_ptr()) == 0
    plain = torch.ones(20)
    assert runtime.npuHostRegister(plain.data_ptr(), 80, pinned) == 0
    assert runtime.npuHostUnregister(plain.data_ptr()) == 0
    assert runtime.npuHostRegister(shared.data_ptr(), 0, pinned) != 0
    assert runtime.npuHostRegister(0, 4096, pinned) != 0
    assert runtime.npuHostUnregister(0) != 0


# ------------------------------------------------------------------ synchronize and sync debug mode


def test_explicit_synchronize_is_not_judged_by_sync_debug_mode():
    result = run_python(
        textwrap.dedent(
            """
            import torch, torch_npu
            x = torch.ones(4, device="npu")
            torch.npu.set_sync_debug_mode("error")
            torch.npu.synchronize()
            torch.npu.current_stream().synchronize()
            try:
                x.sum().item()
            except RuntimeError as error:
                print("ITEM:", "synchroniz" in str(error))
            torch.npu.set_sync_debug_mode(0)
            print("OK")
            """
        )
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout and "ITEM: True" in result.stdout, result.stdout + result.stderr


# ------------------------------------------------------------------ zero-size frees


def test_zero_size_frees_under_profile_memory_log_no_error(tmp_path):
    result = run_python(
        textwrap.dedent(
            f"""
            import torch, torch_npu
            with torch_npu.profiler.profile(profile_memory=True,
                                            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler({str(tmp_path / "prof")!r})):
                for _ in range(3):
                    empty = torch.empty(0, device="npu")
                    empty2 = torch.zeros(0, 4, device="npu")
                    del empty, empty2
                torch.npu.synchronize()
            print("DONE")
            """
        ),
        {"ASCEND_PROCESS_LOG_PATH": str(tmp_path / "log"), "ASCEND_GLOBAL_LOG_LEVEL": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "DONE" in result.stdout
    text = "".join(open(p).read() for p in glob.glob(str(tmp_path / "log" / "debug" / "plog" / "plog-*.log")))
    assert "[ERROR]" not in text, text
    assert "ERROR" not in result.stderr, result.stderr
