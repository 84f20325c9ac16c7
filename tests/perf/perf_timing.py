"""Helpers of the pricing tests: device time of a piece of work between two timing events, and an
estimate-only block with npu as the default device."""

import contextlib

import torch

import npusim


def device_us(work) -> float:
    torch.npu.synchronize()
    start = torch.npu.Event(enable_timing=True)
    end = torch.npu.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


@contextlib.contextmanager
def estimate_on_npu():
    with npusim.estimate(), torch.device("npu"):
        yield
