"""Profiling overhead on an npusim training step.

Times one training step (an MLP with AdamW, forward + backward + step) on the ``npu`` device
without a profiler, under ``torch.profiler.profile(activities=[CPU])`` and under
``torch.profiler.profile(activities=[CPU, PrivateUse1])`` (npusim's device activity, the
torch_npu.profiler default), and prints the ratios against the unprofiled step. The recording
overhead is measured per step while the profiler records; the one-off processing at the end of
the trace (Kineto building the result) is reported separately. No timing assertions.

    python bench/bench_profiler.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch = _common.import_torch_and_npusim(args.threads)
    from torch.profiler import ProfilerActivity, profile

    hidden = 512
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(hidden, hidden), torch.nn.GELU())],
                                torch.nn.Linear(hidden, 10)).to("npu")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randn(64, hidden, device="npu")
    target = torch.randint(0, 10, (64,), device="npu")

    def step():
        loss = torch.nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    steps = 20 if args.quick else 30
    rounds = 7 if args.quick else 9

    def one_round(activities):
        """Seconds per step over `steps` steps, and the trace's processing time."""
        prof = None
        if activities is not None:
            prof = profile(activities=activities)
            prof.start()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        per_step = (time.perf_counter() - start) / steps
        processing = 0.0
        if prof is not None:
            begin = time.perf_counter()
            prof.stop()
            prof.key_averages()
            processing = time.perf_counter() - begin
        return per_step, processing

    for _ in range(3):  # warm up (allocator, first-use imports, Kineto init)
        step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
        step()
    # The three modes interleaved round by round, so that a busy machine hurts them alike.
    modes = {"plain": None, "cpu": [ProfilerActivity.CPU],
             "npu": [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]}
    samples = {name: ([], []) for name in modes}
    for _ in range(rounds):
        for name, activities in modes.items():
            per_step, processing = one_round(activities)
            samples[name][0].append(per_step)
            samples[name][1].append(processing)
    plain = _common.median(samples["plain"][0])
    cpu_only, cpu_processing = _common.median(samples["cpu"][0]), _common.median(samples["cpu"][1])
    with_npu, npu_processing = _common.median(samples["npu"][0]), _common.median(samples["npu"][1])
    rows = [["unprofiled", f"{plain * 1e3:.2f}", "1.00x", "-"],
            ["profile(CPU)", f"{cpu_only * 1e3:.2f}", f"{cpu_only / plain:.2f}x", f"{cpu_processing * 1e3:.0f}"],
            ["profile(CPU, NPU)", f"{with_npu * 1e3:.2f}", f"{with_npu / plain:.2f}x", f"{npu_processing * 1e3:.0f}"]]
    _common.print_table(["training step", "ms/step", "vs unprofiled", "processing ms/trace"], rows)
    # Ratios within a round (the modes ran back to back), then their median: a machine that is busy for a
    # while slows all three modes of that round alike and drops out of the ratio.
    paired = lambda name, base: _common.median([a / b for a, b in zip(samples[name][0], samples[base][0])])
    print(f"npu device activity alone (CPU+NPU vs CPU): {100 * (paired('npu', 'cpu') - 1):+.1f}%")
    overhead = 100 * (paired("npu", "plain") - 1)
    verdict = "MET" if overhead <= 15 else "MISSED"
    print(f"TARGET profiler overhead (CPU+NPU vs unprofiled step): {overhead:+.1f}% (target <= 15%) {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
