"""Peak resident memory of the examples on npu against plain CPU PyTorch.

Every measurement is a fresh Python process that imports torch and npusim and then either
stops there (the baseline) or trains one example for a few steps on cpu or on npu; it reports
its peak resident set size (``VmHWM`` from ``/proc/self/status``, or ``ru_maxrss``). The
memory a run adds is its peak minus the median baseline, so the interpreter, torch and
npusim themselves are not counted. Processes of all kinds alternate, and the median of the
repetitions is kept.

On npu the tensors live in npusim's caching allocator (simulated device memory is host
memory), which keeps freed blocks for reuse, as torch_npu's does; on cpu they come from
PyTorch's CPU allocator (malloc). The table also shows what the npu allocator reported as
its peak reserved and allocated bytes.

Prints one line per example; the target line takes the worst npu/cpu ratio of the added
memory (each example must meet the target), and the geometric mean is printed as well:

    TARGET peak memory (worst example): 1.05x (target <= 1.1x) MET

Usage: python bench/bench_peak_memory.py [--quick] [--steps N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TARGET = 1.10
EXAMPLES = ("resnet_cnn", "gpt_transformer")

# Runs in the child. argv: example ("none" for the baseline), device, steps, threads.
CHILD = r"""
import json, resource, sys
example, device, steps, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import torch
import npusim
torch.set_num_threads(threads)
info = {}
if example != "none":
    module = __import__(example)
    module.train(device, steps)
    if device == "npu":
        info["npu_max_reserved"] = torch.npu.max_memory_reserved()
        info["npu_max_allocated"] = torch.npu.max_memory_allocated()
peak_kib = None
try:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                peak_kib = int(line.split()[1])
except OSError:
    pass
if peak_kib is None:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
info["peak_bytes"] = peak_kib * 1024
print("RESULT " + json.dumps(info))
"""


def run_child(example: str, device: str, steps: int, threads: int) -> dict:
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, example, device, str(steps), str(threads)],
        env=_common.subprocess_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"child {example}/{device} failed (rc {completed.returncode}):\n{completed.stderr[-2000:]}")


def mib(value: float) -> str:
    return f"{value / (1 << 20):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (about 30 s)")
    parser.add_argument("--steps", type=int, default=3, help="training steps per run (default 3)")
    parser.add_argument("--repeats", type=int, default=None, help="processes per kind")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads in the children (default 1)")
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else 4)

    kinds = [("none", "-")] + [(example, device) for example in EXAMPLES for device in ("cpu", "npu")]
    samples: dict[tuple[str, str], list[dict]] = {kind: [] for kind in kinds}
    for r in range(repeats):
        # Rotate the order so that no kind always runs right after another.
        rotated = kinds[r % len(kinds):] + kinds[: r % len(kinds)]
        for example, device in rotated:
            samples[(example, device)].append(run_child(example, device, args.steps, args.threads))

    def median_of(kind, key):
        return _common.median([s[key] for s in samples[kind]])

    baseline = median_of(("none", "-"), "peak_bytes")
    print(f"npusim from {_common.npusim_location()}")
    print(f"peak RSS (VmHWM) of fresh processes, {args.steps} training steps, threads {args.threads}, "
          f"median of {repeats} processes per kind; baseline (import torch + npusim): {mib(baseline)} MiB")
    rows, ratios = [], []
    for example in EXAMPLES:
        cpu = median_of((example, "cpu"), "peak_bytes") - baseline
        npu = median_of((example, "npu"), "peak_bytes") - baseline
        reserved = median_of((example, "npu"), "npu_max_reserved")
        allocated = median_of((example, "npu"), "npu_max_allocated")
        ratio = npu / cpu
        ratios.append(ratio)
        rows.append([example, mib(cpu), mib(npu), f"{ratio:.3f}x", mib(reserved), mib(allocated)])
    _common.print_table(
        ["example", "cpu +MiB", "npu +MiB", "npu/cpu", "npu max reserved MiB", "npu max allocated MiB"], rows
    )
    print(f"geometric mean of the ratios: {_common.geometric_mean(ratios):.3f}x; worst {max(ratios):.3f}x")
    print(_common.target_line("peak memory (worst example)", max(ratios), TARGET))


if __name__ == "__main__":
    main()
