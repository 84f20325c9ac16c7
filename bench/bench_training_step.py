"""Training-step time of the examples on npu against plain CPU PyTorch.

For each example (``examples/resnet_cnn.py``: a small ResNet with SGD, ``examples/
gpt_transformer.py``: a small GPT with AdamW, ``examples/lstm_language_model.py``: a 2-layer LSTM
language model with truncated BPTT, SGD and gradient clipping) the benchmark builds the model and optimizer as
the example's ``train()`` does (its ``Trainer``), once on cpu and once on npu, runs warm-up steps
on both, and then times steady-state steps in rounds that alternate cpu and npu (to cancel drift
from other load on the machine). A step is the example's own ``Trainer.step()``: make
the synthetic batch on the host and move it to the device, zero_grad, forward, loss,
backward, optimizer step, ``loss.item()`` (which synchronizes).

Prints the median step time per device and example, the ratio of those medians, and the
median of the per-round npu/cpu ratios (each round times one cpu and one npu step back to
back, which cancels most drift from other load); one target line per example takes the latter
(the transformer and the CNN within 5% of the CPU, the LSTM language model within 10%), and the
geometric mean is printed as well:

    TARGET training step gpt_transformer: 0.97x (target <= 1.05x) MET

Usage: python bench/bench_training_step.py [--quick] [--threads N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

# Per example: npu/cpu step time (issue 26).
TARGETS = {"resnet_cnn": 1.05, "gpt_transformer": 1.05, "lstm_language_model": 1.10}


def measure(example, warmup: int, rounds: int, steps_per_round: int) -> dict:
    """Median step time per device, and the median of the per-round npu/cpu ratios.

    Each round times `steps_per_round` steps on each device back to back, so the two times of
    a round see about the same load on the machine; the median of the per-round ratios is
    therefore less sensitive to drift than the ratio of the two medians.
    """
    runners = {device: example.Trainer(device) for device in ("cpu", "npu")}
    losses = {device: [runners[device].step() for _ in range(warmup)] for device in ("cpu", "npu")}
    if losses["cpu"] != losses["npu"]:
        print(f"warning: {example.__name__}: warm-up losses differ: {losses}", file=sys.stderr)
    per_step = {"cpu": [], "npu": []}
    cpu_time = {"cpu": [], "npu": []}  # process CPU time, all threads (npu runs backward on a worker thread)
    for r in range(rounds):
        # Alternate which device goes first, so that neither always follows the other.
        order = ("cpu", "npu") if r % 2 == 0 else ("npu", "cpu")
        for device in order:
            runner = runners[device]
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(steps_per_round):
                runner.step()
            per_step[device].append((time.perf_counter() - start) / steps_per_round)
            cpu_time[device].append((time.process_time() - start_cpu) / steps_per_round)
    paired = [n / c for n, c in zip(per_step["npu"], per_step["cpu"])]
    paired_cpu_time = [n / c for n, c in zip(cpu_time["npu"], cpu_time["cpu"])]
    return {
        "cpu": _common.median(per_step["cpu"]),
        "npu": _common.median(per_step["npu"]),
        "paired_ratio": _common.median(paired),
        "paired_cpu_time_ratio": _common.median(paired_cpu_time),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (about 15 s)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for both devices (default 1)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per device and example")
    parser.add_argument("--steps-per-round", type=int, default=None, help="steps in one timed round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per device first (default 3)")
    args = parser.parse_args()
    rounds = args.rounds or (8 if args.quick else 40)
    steps_per_round = args.steps_per_round or 1

    torch = _common.import_torch_and_npusim(args.threads)
    if _common.EXAMPLES_DIR not in sys.path:
        sys.path.insert(0, _common.EXAMPLES_DIR)

    print(f"npusim from {_common.npusim_location()}")
    print(f"training step, torch {torch.__version__}, threads {torch.get_num_threads()}, {args.warmup} warm-up "
          f"steps, {rounds} alternating rounds of {steps_per_round} step(s) per device, median per step")
    rows, ratios = [], []
    import gpt_transformer
    import lstm_language_model
    import resnet_cnn

    examples = (resnet_cnn, gpt_transformer, lstm_language_model)
    for example in examples:
        medians = measure(example, args.warmup, rounds, steps_per_round)
        ratio = medians["paired_ratio"]
        ratios.append(ratio)
        rows.append([example.__name__, f"{medians['cpu'] * 1e3:.2f}", f"{medians['npu'] * 1e3:.2f}",
                     f"{(medians['npu'] - medians['cpu']) * 1e3:+.2f}", f"{medians['npu'] / medians['cpu']:.3f}x",
                     f"{ratio:.3f}x", f"{medians['paired_cpu_time_ratio']:.3f}x"])
    _common.print_table(["example", "cpu ms", "npu ms", "added ms", "ratio of medians", "paired ratio",
                         "paired CPU-time ratio"], rows)
    print("(ms: median wall time per step; the target uses the median of the per-round paired npu/cpu wall-time "
          "ratios; the CPU-time ratio, process CPU time of all threads, is a cross-check less sensitive to other "
          "load on the machine)")
    print(f"geometric mean of the ratios: {_common.geometric_mean(ratios):.3f}x; worst {max(ratios):.3f}x")
    for example, ratio in zip(examples, ratios):
        print(_common.target_line(f"training step {example.__name__}", ratio, TARGETS[example.__name__]))


if __name__ == "__main__":
    main()
