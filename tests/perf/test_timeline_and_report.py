"""The simulated timeline as a program sees it: priced operators, overlap, syncs, events, and the
performance report; estimate-only mode."""

import os
import pathlib
import subprocess
import sys
import warnings

import pytest
import torch

import npusim

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def elapsed_ms(work) -> float:
    torch.npu.synchronize()  # measure from an idle device: the launch's dispatch time is included
    start = torch.npu.Event(enable_timing=True)
    end = torch.npu.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def test_larger_matmuls_take_longer_and_fp16_beats_fp32():
    small = torch.randn(256, 256, device="npu")
    large = torch.randn(2048, 2048, device="npu")
    t_small = elapsed_ms(lambda: small @ small)
    t_large = elapsed_ms(lambda: large @ large)
    assert t_large > 5 * t_small  # 512x the FLOPs; small launches are dominated by fixed costs
    half = large.half()
    assert elapsed_ms(lambda: half @ half) < elapsed_ms(lambda: large @ large) / 2


def test_event_time_is_simulated_not_host_time():
    x = torch.randn(4096, 4096, device="npu")
    ms = elapsed_ms(lambda: x @ x)  # 2*4096^3 fp32 FLOPs on a 910B2: about 1.6 ms
    assert 0.8 < ms < 4.0, ms
    again = elapsed_ms(lambda: x @ x)
    assert again == pytest.approx(ms, rel=1e-6)  # deterministic, independent of the host


def test_host_runs_ahead_until_a_sync_point():
    x = torch.randn(2048, 2048, device="npu")
    torch.npu.synchronize()
    before = npusim._C._timeline_info(0)
    for _ in range(5):
        x = x @ x
    during = npusim._C._timeline_info(0)
    assert during["device_ns"] > during["host_ns"]  # queued work: the device is behind
    x.sum().item()
    after = npusim._C._timeline_info(0)
    assert after["host_ns"] >= after["device_ns"]  # .item() waited for the device
    assert during["host_ns"] > before["host_ns"]


def test_streams_overlap():
    x = torch.randn(2048, 2048, device="npu")
    torch.npu.synchronize()
    side = torch.npu.Stream()
    start = npusim._C._timeline_info(0)["device_ns"]

    def serial():
        x @ x
        x @ x

    t_serial = elapsed_ms(serial)
    torch.npu.synchronize()
    begin = torch.npu.Event(enable_timing=True)
    finish = torch.npu.Event(enable_timing=True)
    begin.record()
    x @ x
    with torch.npu.stream(side):
        x @ x
    side_done = torch.npu.Event(enable_timing=True)
    side_done.record(side)
    torch.npu.current_stream().wait_event(side_done)
    finish.record()
    finish.synchronize()
    assert begin.elapsed_time(finish) < 0.75 * t_serial
    assert start >= 0


def test_performance_report_breakdown_and_mfu():
    torch.npu.synchronize()
    npusim.reset_performance_report()
    a = torch.randn(2048, 2048, device="npu", dtype=torch.float16)
    for _ in range(3):
        a = torch.relu(a @ a)
    torch.npu.synchronize()
    report = npusim.performance_report(steps=3)
    assert report["chip"] == "Ascend910B2"
    assert report["busy_s"]["cube"] > 0 and report["busy_s"]["vector"] > 0
    assert report["step_s"] == pytest.approx(report["elapsed_s"] / 3)
    assert 0 < report["mfu"] < 1
    assert report["launches"] >= 6


def test_pinned_copies_are_cheaper_than_pageable():
    host = torch.randn(1 << 22)
    pinned = host.pin_memory()
    assert pinned.is_pinned()
    torch.npu.synchronize()
    pageable_ms = elapsed_ms(lambda: host.to("npu"))
    pinned_ms = elapsed_ms(lambda: pinned.to("npu", non_blocking=True))
    assert pinned_ms < pageable_ms


def test_estimate_only_mode_gives_shapes_memory_and_time_without_data():
    before = torch.npu.memory_allocated()
    with npusim.estimate(), torch.device("npu"):
        assert npusim.is_estimate_only()
        model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
        out = model(torch.randn(64, 1024))
        assert out.shape == (64, 1024) and out.device.type == "npu"
        assert torch.npu.memory_allocated() > before + 4 * (1024 * 4096 * 2)
        out.sum().backward()
        assert model[0].weight.grad.shape == (4096, 1024)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert out.sum().item() == 0
            assert torch.nonzero(out > 0).shape == (64 * 1024, 2)
        texts = " ".join(str(w.message) for w in caught)
        assert "estimate-only" in texts
        del model, out
    assert not npusim.is_estimate_only()


def test_estimate_only_overcommits_and_reports_the_need():
    code = (
        "import torch, npusim\n"
        "with npusim.estimate():\n"
        "    x = torch.empty(3, 1 << 30, device='npu')  # 12 GiB of float32 on a 1 GiB device\n"
        "    print('peak', torch.npu.max_memory_allocated() >> 30)\n"
        "try:\n"
        "    torch.empty(1 << 30, device='npu')\n"
        "except torch.OutOfMemoryError as error:\n"
        "    print('oom after the block')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, NPUSIM_HBM_SIZE="1G"))
    assert result.returncode == 0, result.stderr
    assert "peak 12" in result.stdout
    assert "oom after the block" in result.stdout


def test_megatron_estimate_prices_the_published_pipeline_setup():
    """The documented command's default: MindSpeed-LLM's LLaMA-2-7B, TP1 PP2 DP4, 64 micro-batches of one."""
    result = subprocess.run([sys.executable, str(EXAMPLES / "megatron_estimate.py"), "--layers", "4"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "4 layers, TP1 PP2 DP4" in result.stdout
    assert "64 micro-batches per step" in result.stdout
    assert "x (64 + 2 - 1)" in result.stdout
    assert "tokens/s per NPU (published: 4733)" in result.stdout
