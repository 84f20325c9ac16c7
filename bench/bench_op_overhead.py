"""Per-operator overhead of the npu device against plain CPU PyTorch, on tiny tensors.

On tiny tensors a kernel does almost no work, so the time of one call is the dispatch path:
for the CPU device PyTorch's dispatcher and the CPU kernel; for npu additionally npusim's
operator executor (boxing, CPU aliases of the arguments, allocation from the simulated
device's caching allocator, adoption of the results, the simulated timeline), or npusim's
native kernels for views and factories. Each operator is timed with ``timeit`` in batches of
many calls; cpu and npu batches alternate, and the median per-call time of each is kept.

Prints a table with the per-call medians and the npu/cpu ratio of each operator, and the
geometric mean of the ratios as the target line:

    TARGET per-op overhead: 1.62x (target <= 2.0x) MET

Usage: python bench/bench_op_overhead.py [--quick] [--threads N] [--elements N]
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TARGET = 2.0

# name -> (statement, path on npu); each statement is one call. "executor": the boxed
# fallback running the CPU kernel on device memory; "native": npusim's own kernel (views,
# factories), or a composite that reaches only native kernels.
OPERATORS = {
    "add": ("a + b", "executor"),
    "mul": ("a * b", "executor"),
    "add_ (in-place)": ("c.add_(b)", "executor"),
    "view": ("a.view(2, -1)", "native"),
    "sum": ("a.sum()", "executor"),
    "relu": ("torch.relu(a)", "executor"),
    "matmul 8x8": ("m @ m", "executor"),
    "index (tensor)": ("a[idx]", "executor"),
    "select a[1]": ("a[1]", "native"),
    "cat": ("torch.cat([a, b])", "executor"),
    "clone": ("a.clone()", "executor"),
    "zeros": ("torch.zeros(n, device=device)", "native+executor"),
}


def make_namespace(torch, device: str, elements: int) -> dict:
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(elements, generator=generator)
    b = torch.randn(elements, generator=generator)
    m = torch.randn(8, 8, generator=generator)
    idx = torch.tensor([0, 2, 1, 3])
    return {
        "torch": torch,
        "device": device,
        "n": elements,
        "a": a.to(device),
        "b": b.to(device),
        "c": torch.zeros(elements).to(device),
        "m": m.to(device),
        "idx": idx.to(device),
    }


def check_same_results(torch, namespaces: dict) -> None:
    """The benchmark is only meaningful if both devices compute the same thing."""
    for name, (statement, _) in OPERATORS.items():
        if statement.startswith("c."):
            continue
        cpu = eval(statement, dict(namespaces["cpu"]))
        npu = eval(statement, dict(namespaces["npu"]))
        if not torch.equal(cpu, npu.cpu()):
            print(f"warning: {name} differs between cpu and npu", file=sys.stderr)


def calibrate(timer: timeit.Timer, seconds: float) -> int:
    """Number of calls that take about `seconds` per batch."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= seconds / 4 or number >= 1 << 22:
            return max(1, int(number * seconds / max(elapsed, 1e-9)))
        number *= 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer and shorter batches (about 10 s)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for both devices (default 1)")
    parser.add_argument("--elements", type=int, default=16, help="elements of the 1-D operands (default 16)")
    parser.add_argument("--repeats", type=int, default=None, help="batches per device and operator")
    parser.add_argument("--batch-seconds", type=float, default=None, help="target duration of one batch")
    args = parser.parse_args()
    if args.elements < 4 or args.elements % 2:
        parser.error("--elements must be even and at least 4 (the operators index 4 elements and view as 2 rows)")
    repeats = args.repeats or (7 if args.quick else 25)
    batch_seconds = args.batch_seconds or (0.02 if args.quick else 0.05)

    torch = _common.import_torch_and_npusim(args.threads)
    namespaces = {device: make_namespace(torch, device, args.elements) for device in ("cpu", "npu")}
    check_same_results(torch, namespaces)

    print(f"npusim from {_common.npusim_location()}")
    print(f"per-op latency, {args.elements}-element float32 tensors (matmul 8x8), torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, {repeats} alternating batches per device, median per call")
    rows, ratios, executor_ratios = [], [], []
    for name, (statement, path) in OPERATORS.items():
        timers = {d: timeit.Timer(statement, globals=namespaces[d]) for d in ("cpu", "npu")}
        for timer in timers.values():
            timer.timeit(200)  # warm up: first-call records, allocator pools, placement warnings
        number = calibrate(timers["cpu"], batch_seconds)
        per_call = {"cpu": [], "npu": []}
        for _ in range(repeats):
            for device in ("cpu", "npu"):
                per_call[device].append(timers[device].timeit(number) / number)
        cpu = _common.median(per_call["cpu"])
        npu = _common.median(per_call["npu"])
        ratio = npu / cpu
        ratios.append(ratio)
        if path == "executor":
            executor_ratios.append(ratio)
        rows.append([name, path, f"{cpu * 1e6:.2f}", f"{npu * 1e6:.2f}", f"{(npu - cpu) * 1e6:+.2f}", f"{ratio:.2f}x"])
    _common.print_table(["operator", "npu path", "cpu us", "npu us", "added us", "npu/cpu"], rows)
    geomean = _common.geometric_mean(ratios)
    print(f"geometric mean of {len(ratios)} ratios: {geomean:.2f}x; worst {max(ratios):.2f}x; "
          f"executor-path operators only: {_common.geometric_mean(executor_ratios):.2f}x")
    print(_common.target_line("per-op overhead", geomean, TARGET))


if __name__ == "__main__":
    main()
