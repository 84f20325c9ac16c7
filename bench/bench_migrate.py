"""Speed of ``npusim migrate`` on a generated 10,000-line CUDA repository (target: under 10 s).

The repository is written fresh into a temporary folder: 100 modules of about 100 lines each,
every one a realistic mix of model code, CUDA device handling (``.cuda()``, ``torch.cuda.*``,
``"cuda:N"`` strings, AMP, NCCL, ``map_location``), plain Python without CUDA, comments and
docstrings, plus a few C++/CUDA sources with a custom operator. The benchmark times the whole
migration (parsing, rules, reports, copying) in-process, after ``import torch`` and the
migration package are loaded (a one-time cost, printed separately), and reports the ratio to
the target. Nothing is asserted.

Usage: python bench/bench_migrate.py [--quick] [--lines N]
"""

from __future__ import annotations

import argparse
import os
import sys
import subprocess
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ensure_npusim_on_path, subprocess_env, target_line  # noqa: E402

TARGET_SECONDS = 10.0

MODULE_TEMPLATE = '''"""Module {index}: a block of the model and its training helpers."""
import os
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import GradScaler

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
CHECKPOINT = os.path.join("checkpoints", "block{index}.pt")


class Block{index}(nn.Module):
    """A residual MLP block; width {width}."""

    def __init__(self, width: int = {width}):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        # pre-norm residual
        h = self.fc1(self.norm(x))
        h = F.gelu(h)
        h = self.dropout(self.fc2(h))
        return x + h


def make_batch(batch_size: int, width: int = {width}):
    x = torch.randn(batch_size, width)
    y = torch.randint(0, 10, (batch_size,))
    return x.cuda(non_blocking=True), y.to("cuda:0")


def train_step(model, optimizer, scaler: GradScaler, batch):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        logits = model(x)[:, :10]
        loss = F.cross_entropy(logits, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()


def evaluate(model, batches):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            if not x.is_cuda:
                x = x.cuda()
            total += F.cross_entropy(model(x)[:, :10], y.cuda()).item()
    model.train()
    return total / max(len(batches), 1)


def report_memory(tag: str) -> str:
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated() / 2**20
    peak = torch.cuda.max_memory_allocated() / 2**20
    return f"{{tag}}: {{allocated:.1f}} MiB (peak {{peak:.1f}} MiB)"


def save(model, optimizer, step: int) -> None:
    torch.save({{"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}}, CHECKPOINT)


def load(model, optimizer) -> int:
    state = torch.load(CHECKPOINT, map_location="cuda:0")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["step"]


def setup_distributed(rank: int, world: int) -> None:
    torch.distributed.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank % torch.cuda.device_count())


def schedule(step: int, warmup: int = 100, base: float = 3e-4) -> float:
    """Cosine schedule with warmup (plain Python: nothing to migrate)."""
    if step < warmup:
        return base * step / warmup
    progress = (step - warmup) / max(1, 10000 - warmup)
    return base * 0.5 * (1 + math.cos(math.pi * progress))


def summarize(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return {{"min": ordered[0], "median": ordered[middle], "max": ordered[-1]}}
'''

CPP_TEMPLATE = """#include <torch/extension.h>
torch::Tensor scale{index}(torch::Tensor x, double s);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("scale{index}", &scale{index}); }}
"""
CU_TEMPLATE = """__global__ void scale_kernel{index}(float* x, float s, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}}
"""


def generate(folder: str, lines: int) -> int:
    written = 0
    index = 0
    package = os.path.join(folder, "bigrepo", "model")
    os.makedirs(package)
    open(os.path.join(package, "__init__.py"), "w").close()
    while written < lines:
        text = MODULE_TEMPLATE.format(index=index, width=32 + index % 7 * 16)
        with open(os.path.join(package, f"block{index}.py"), "w") as file:
            file.write(text)
        written += text.count("\n")
        index += 1
    csrc = os.path.join(folder, "bigrepo", "csrc")
    os.makedirs(csrc)
    for number in range(4):
        with open(os.path.join(csrc, f"op{number}.cpp"), "w") as file:
            file.write(CPP_TEMPLATE.format(index=number))
        with open(os.path.join(csrc, f"op{number}_kernel.cu"), "w") as file:
            file.write(CU_TEMPLATE.format(index=number))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a 2,000-line repository")
    parser.add_argument("--lines", type=int, default=10_000)
    args = parser.parse_args()
    lines = 2_000 if args.quick else args.lines
    ensure_npusim_on_path()
    started = time.perf_counter()
    import torch  # noqa: F401

    from npusim.migration import migrate
    from npusim.migration import support_data

    support_data.load()
    print(f"one-time: import torch, npusim and the migration data: {time.perf_counter() - started:.2f} s")
    with tempfile.TemporaryDirectory() as folder:
        written = generate(folder, lines)
        started = time.perf_counter()
        result = migrate(os.path.join(folder, "bigrepo"), os.path.join(folder, "out"))
        elapsed = time.perf_counter() - started
        changes = sum(len(f.changes) for f in result.files)
        print(
            f"migrated {written} lines in {len(result.files)} files: {len(result.changed_files)} files changed, "
            f"{changes} changes, {elapsed:.2f} s ({written / elapsed:,.0f} lines/s), {os.cpu_count()} CPUs"
        )
        # The command as a user runs it, interpreter start and imports included.
        started = time.perf_counter()
        command = subprocess.run(
            [sys.executable, "-m", "npusim", "migrate", os.path.join(folder, "bigrepo"), "-o", os.path.join(folder, "cli")],
            env=subprocess_env(),
            capture_output=True,
            text=True,
        )
        end_to_end = time.perf_counter() - started
        if command.returncode != 0:
            print(command.stderr, file=sys.stderr)
            return 1
        print(f"`npusim migrate` command, end to end: {end_to_end:.2f} s")
    scale = 10_000 / written
    print(target_line(f"migrate a 10,000-line repository (scaled from {written} lines)", elapsed * scale, TARGET_SECONDS, "s"))
    print(target_line("the same with the command's start-up", end_to_end * scale, TARGET_SECONDS, "s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
