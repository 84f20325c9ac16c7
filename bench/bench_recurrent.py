"""Host time of recurrent layers on npu against plain CPU PyTorch.

nn.LSTM and nn.GRU run on npu as torch_npu runs them (one fused kernel per layer and direction on
the simulated chip) with the CPU's own implementation doing the arithmetic on the device memory,
so their host time should be the CPU's. Measured: forward and backward of a 2-layer LSTM (input
32, hidden 64, sequence 35, batch 8) and of a 2-layer GRU of the same size, and a step of a
single LSTMCell unrolled over the sequence (the per-step fused-cell path torch_npu also has).
Each round times one call on cpu and one on npu back to back; the result is the median of the
per-round ratios:

    TARGET 2-layer LSTM forward+backward: 1.02x (target <= 1.1x) MET

Usage: python bench/bench_recurrent.py [--quick] [--threads N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TARGET = 1.10


def cases(torch):
    def layers(cls):
        def make(device):
            torch.manual_seed(0)
            model = cls(32, 64, num_layers=2).to(device)
            x = torch.randn(35, 8, 32).to(device)

            def run():
                out, _ = model(x)
                out.sum().backward()

            return run

        return make

    def unrolled_cell(device):
        torch.manual_seed(0)
        cell = torch.nn.LSTMCell(32, 64).to(device)
        x = torch.randn(35, 8, 32).to(device)

        def run():
            h = c = torch.zeros(8, 64, device=device)
            for step in range(x.size(0)):
                h, c = cell(x[step], (h, c))
            h.sum().backward()

        return run

    return {
        "2-layer LSTM forward+backward": (layers(torch.nn.LSTM), TARGET),
        "2-layer GRU forward+backward": (layers(torch.nn.GRU), TARGET),
        "LSTMCell unrolled 35 steps, forward+backward": (unrolled_cell, None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (about 10 s)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for both devices (default 1)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 25, quick 9)")
    args = parser.parse_args()
    rounds = args.rounds or (9 if args.quick else 25)
    torch = _common.import_torch_and_npusim(args.threads)

    print(f"npusim from {_common.npusim_location()}")
    print(f"recurrent layers, torch {torch.__version__}, threads {torch.get_num_threads()}, {rounds} alternating "
          f"rounds of 5 calls, median per call")
    rows, targets = [], []
    for name, (make, target) in cases(torch).items():
        runs = {device: make(device) for device in ("cpu", "npu")}
        for run in runs.values():
            run()
            run()
        per_call = {"cpu": [], "npu": []}
        for r in range(rounds):
            for device in ("cpu", "npu") if r % 2 == 0 else ("npu", "cpu"):
                start = time.perf_counter()
                for _ in range(5):
                    runs[device]()
                per_call[device].append((time.perf_counter() - start) / 5)
        ratio = _common.median([n / c for n, c in zip(per_call["npu"], per_call["cpu"])])
        cpu, npu = _common.median(per_call["cpu"]), _common.median(per_call["npu"])
        rows.append([name, f"{cpu * 1e3:.3f}", f"{npu * 1e3:.3f}", f"{ratio:.2f}x"])
        if target is not None:
            targets.append(_common.target_line(name, ratio, target))
    _common.print_table(["case", "cpu ms", "npu ms", "paired npu/cpu"], rows)
    for line in targets:
        print(line)


if __name__ == "__main__":
    main()
