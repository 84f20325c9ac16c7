"""Per-allocation host cost on npu against CPU: one allocation and its free, small shapes.

Two paths, each npu against its CPU counterpart in the same run (medians of rounds):
  - ``torch.empty_strided(size, stride, device=..., dtype=...)`` (Python argument parser,
    dispatcher, the npu caching allocator vs PyTorch's CPU allocator);
  - the entry point compiled wrappers use: ``npusim._C._empty_strided_npu`` against Inductor's
    ``torch._C._dynamo.guards._empty_strided_cpu``.
Target: the wrapper path on npu within 1.2x of CPU's (a caching allocator keeps statistics,
pools and streams that malloc does not; the step-level target is bench_compile.py's).

Usage: python bench/bench_alloc_path.py [--quick] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

SHAPES = [((64,), (1,)), ((32, 64), (64, 1)), ((8, 128, 64), (8192, 64, 1)), ((256, 256), (256, 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rounds = 5 if args.quick else args.rounds
    torch = _common.import_torch_and_npusim(threads=1)
    from npusim import _C

    npu = torch.device("npu")
    torch.empty(1, device=npu)

    def generic(device):
        def run():
            for size, stride in SHAPES:
                tensor = torch.empty_strided(size, stride, device=device, dtype=torch.float32)
                del tensor
        return run

    def wrapper_path(function):
        def run():
            for size, stride in SHAPES:
                tensor = function(size, stride, torch.float32)
                del tensor
        return run

    cases = {
        ("empty_strided", "cpu"): generic("cpu"),
        ("empty_strided", "npu"): generic(npu),
        ("wrapper", "cpu"): wrapper_path(torch._C._dynamo.guards._empty_strided_cpu),
        ("wrapper", "npu"): wrapper_path(_C._empty_strided_npu),
    }
    number = 2000
    samples = {key: [] for key in cases}
    for run in cases.values():
        run()  # warm the caches and the allocator
    for _ in range(rounds):  # alternating rounds: load on the machine hits every case alike
        for key, run in cases.items():
            samples[key].append(timeit.timeit(run, number=number) / (number * len(SHAPES)) * 1e9)
    ns = {key: _common.median(values) for key, values in samples.items()}
    rows = []
    for path in ("empty_strided", "wrapper"):
        rows.append([path, f"{ns[(path, 'cpu')]:.0f}", f"{ns[(path, 'npu')]:.0f}",
                     f"{ns[(path, 'npu')] / ns[(path, 'cpu')]:.2f}x"])
    print("host ns per allocation + free (median of rounds, 1 thread)")
    _common.print_table(["path", "cpu ns", "npu ns", "npu/cpu"], rows)
    print(_common.target_line("npu allocation (compiled wrapper path) npu/cpu",
                              ns[("wrapper", "npu")] / ns[("wrapper", "cpu")], 1.2))


if __name__ == "__main__":
    main()
