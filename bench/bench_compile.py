"""Graph mode on npu: host time of a compiled GPT training step, and the estimated Ascend time
of eager vs compiled vs NPUGraph.

The model is ``examples/gpt_transformer.py``'s SmallGPT (a smaller configuration by default, so
that Inductor's C++ compile stays short on a small machine). A step is forward, cross-entropy
loss, backward (no optimizer: the compiled region is the model and its loss).

Host time (real seconds, medians of alternating rounds):
  - npu compiled / npu eager;
  - npu compiled / cpu compiled (Inductor's own CPU backend on the same program): the target
    is that a compiled step on npusim is not slower than CPU Inductor by more than 10%.

Estimated Ascend time (the simulated timeline, deterministic):
  - training step (forward, loss, backward), eager vs compiled (fused kernels priced as one
    launch each) vs NPUGraph (the eager step captured, backward included, replayed as one graph
    launch) vs torch.compile(mode="reduce-overhead") (the compiled forward and backward replayed
    from NPUGraphs);
  - forward pass, eager vs compiled vs NPUGraph replay (one graph launch, no per-kernel
    dispatch).

    TARGET compiled GPT step npu/cpu-inductor: <ratio>x (target <= 1.1x) MET or MISSED

Usage: python bench/bench_compile.py [--quick] [--width N] [--layers N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TARGET = 1.10


def build(device, args):
    import gpt_transformer
    import torch

    torch.manual_seed(0)
    model = gpt_transformer.SmallGPT(
        vocab=args.vocab, width=args.width, layers=args.layers, heads=4, context=args.context
    ).to(device)
    tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1), generator=torch.Generator().manual_seed(1))
    return model, tokens.to(device)


def loss_fn(model, tokens):
    import torch.nn.functional as F

    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))


def train_step(step_fn, model, tokens):
    loss = step_fn(model, tokens)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss


def host_seconds(step, sync, repeat):
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        step()
    sync()
    return (time.perf_counter() - start) / repeat


def simulated_ns(step):
    """Simulated elapsed time of `step` on the chip (host clock after a synchronize)."""
    import torch

    from npusim import _C

    torch.npu.synchronize()
    start = int(_C._timeline_info(0)["host_ns"])
    step()
    torch.npu.synchronize()
    return int(_C._timeline_info(0)["host_ns"]) - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--context", type=int, default=32)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.quick:
        args.rounds = 3
    _common.ensure_npusim_on_path()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    import torch

    import npusim  # noqa: F401

    npu_model, npu_tokens = build("npu", args)
    cpu_model, cpu_tokens = build("cpu", args)
    compiled = torch.compile(loss_fn)

    def npu_eager():
        train_step(loss_fn, npu_model, npu_tokens)

    def npu_compiled():
        train_step(compiled, npu_model, npu_tokens)

    def cpu_compiled():
        train_step(compiled, cpu_model, cpu_tokens)

    start = time.perf_counter()
    for step in (npu_compiled, cpu_compiled, npu_eager):
        for _ in range(2):  # compile (or warm up), then one more
            step()
    print(f"compile + warm-up: {time.perf_counter() - start:.1f} s")

    npu_sync, cpu_sync = torch.npu.synchronize, (lambda: None)
    eager_ratio, cpu_ratio, times = [], [], {"npu eager": [], "npu compiled": [], "cpu inductor": []}
    for _ in range(args.rounds):
        e = host_seconds(npu_eager, npu_sync, 3)
        c = host_seconds(npu_compiled, npu_sync, 3)
        k = host_seconds(cpu_compiled, cpu_sync, 3)
        times["npu eager"].append(e)
        times["npu compiled"].append(c)
        times["cpu inductor"].append(k)
        eager_ratio.append(c / e)
        cpu_ratio.append(c / k)
    print("host time per training step (median):")
    for name, values in times.items():
        print(f"  {name:14s} {statistics.median(values) * 1e3:8.2f} ms")
    print(f"  npu compiled / npu eager:    {statistics.median(eager_ratio):.2f}x")
    print(f"  npu compiled / cpu inductor: {statistics.median(cpu_ratio):.2f}x")

    # Estimated Ascend time (simulated timeline of the chosen chip).
    train_eager = simulated_ns(npu_eager)
    train_compiled = simulated_ns(npu_compiled)
    reduced = torch.compile(loss_fn, mode="reduce-overhead")

    def npu_reduced():
        train_step(reduced, npu_model, npu_tokens)

    for _ in range(4):  # warm-up, capture (the backward one step after the forward), replay
        npu_reduced()
    train_reduced = simulated_ns(npu_reduced)
    step_graph = torch.npu.NPUGraph()
    npu_model.zero_grad(set_to_none=True)
    with torch.npu.graph(step_graph):
        static_step_loss = loss_fn(npu_model, npu_tokens)
        static_step_loss.backward()
    train_graph = simulated_ns(step_graph.replay)
    torch.testing.assert_close(static_step_loss.cpu(), loss_fn(npu_model, npu_tokens).detach().cpu())
    npu_model.zero_grad(set_to_none=True)
    with torch.no_grad():
        forward_eager = simulated_ns(lambda: loss_fn(npu_model, npu_tokens))
        forward_compiled = simulated_ns(lambda: compiled(npu_model, npu_tokens))
        graph = torch.npu.NPUGraph()
        with torch.npu.graph(graph):
            static_loss = loss_fn(npu_model, npu_tokens)
        forward_graph = simulated_ns(graph.replay)
        torch.testing.assert_close(static_loss.cpu(), loss_fn(npu_model, npu_tokens).cpu())
    chip = torch.npu.get_device_name(0)
    print(f"estimated on {chip} (simulated timeline):")
    print(f"  training step  eager {train_eager / 1e6:8.3f} ms   compiled {train_compiled / 1e6:8.3f} ms   "
          f"NPUGraph {train_graph / 1e6:8.3f} ms   reduce-overhead {train_reduced / 1e6:8.3f} ms")
    print(f"    compiled/eager {train_compiled / train_eager:.2f}x   NPUGraph/eager {train_graph / train_eager:.2f}x   "
          f"reduce-overhead/eager {train_reduced / train_eager:.2f}x   "
          f"({len(step_graph.operators)} captured operators in the step graph)")
    print(f"  forward        eager {forward_eager / 1e6:8.3f} ms   compiled {forward_compiled / 1e6:8.3f} ms   "
          f"NPUGraph {forward_graph / 1e6:8.3f} ms   ({len(graph.operators)} captured operators)")
    ratio = statistics.median(cpu_ratio)
    print(f"TARGET compiled GPT step npu/cpu-inductor: {ratio:.2f}x (target <= {TARGET}x) "
          f"{'MET' if ratio <= TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
