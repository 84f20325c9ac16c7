"""Validation of npusim's estimates against published Ascend 910B figures, end to end.

Everything here runs through npusim itself (the operator executor, the placement table, the
performance model and the simulated timeline), in estimate-only mode where the model is too big
for the host. Prints estimate vs reference and the error for each; targets: matmul within 10%,
end-to-end within 20%. The C++ program ``npusim_validate_perf_model`` (bench/validate_perf_model.cpp)
checks the cost model's formulas alone.

References (shared/reference/ascend-hardware.md):
1. Square matmul throughput on a 910B2 (§3.3): fp16 4096^3 314.5 TFLOPS (best 328), fp32 4096^3
   84.5 TFLOPS; one kernel, measured with events as the benchmark did.
2. ResNet-50 training throughput per card (§3.2, Ascend ModelZoo PyTorch README): 1,678 img/s on
   one card with AMP (O2), batch 256 per card; the README names no chip (probably a 910A, see
   the perf model's notes); npusim runs it on its default 910B2 and on the 910A.
3. LLaMA-2-7B training throughput per 910B NPU (§3.2, AscendSpeed README): 2,730 tokens/s per NPU,
   sequence 4096, bf16, 8 NPUs with tensor parallelism; npusim estimates one NPU running the whole
   model (micro-batch 1, no parallelism, no communication), so the per-NPU work differs: see the
   printed notes.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))


def verdict(estimate: float, reference: float, tolerance: float) -> str:
    error = (estimate - reference) / reference * 100
    return f"{estimate:10.1f} {reference:10.1f} {error:+7.1f}%  {'PASS' if abs(error) <= tolerance * 100 else 'FAIL'}"


def matmul_tflops(dtype_name: str, n: int = 4096) -> float:
    import npusim  # noqa: F401

    dtype = getattr(torch, dtype_name)
    with npusim.estimate():
        a = torch.empty(n, n, device="npu", dtype=dtype)
        b = torch.empty(n, n, device="npu", dtype=dtype)
        a @ b  # warm the stream
        torch.npu.synchronize()
        start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
    return 2 * n**3 / seconds / 1e12


class Bottleneck(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, inplanes = [], 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


def resnet50_images_per_second(batch: int) -> float:
    import npusim

    with npusim.estimate(), torch.device("npu"):
        model = ResNet50()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
        images = torch.empty(batch, 3, 224, 224)
        labels = torch.randint(0, 1000, (batch,))
        npusim.reset_performance_report()
        with torch.autocast("npu", dtype=torch.float16):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        report = npusim.performance_report(steps=1)
    return batch / report["step_s"]


def in_fresh_process(function: str, *arguments, soc: str | None = None) -> float:
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import validate_performance as v; print(v.{function}(*{arguments!r}))"
    environment = dict(os.environ)
    if soc:
        environment["NPUSIM_SOC"] = soc
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller ResNet batch and a 4-layer LLaMA")
    args = parser.parse_args()
    print(f"{'check':52} {'estimate':>10} {'reference':>10} {'error':>8}")
    print(f"{'fp16 matmul 4096^3 on 910B2 (TFLOPS)':52} {verdict(in_fresh_process('matmul_tflops', 'float16'), 314.5, 0.10)}")
    print(f"{'fp32 matmul 4096^3 on 910B2 (TFLOPS)':52} {verdict(in_fresh_process('matmul_tflops', 'float32'), 84.5, 0.10)}")
    batch = 32 if args.quick else 256
    for soc in ("Ascend910B2", "Ascend910A"):
        rate = in_fresh_process("resnet50_images_per_second", batch, soc=soc)
        print(f"{f'ResNet-50 train, AMP fp16, batch {batch}, {soc} (img/s)':52} {verdict(rate, 1678, 0.20)}")
    import llama_estimate

    layers = 4 if args.quick else 32
    report = llama_estimate.estimate_step(layers=layers)
    tokens = report["tokens"] / report["step_s"] * (layers / 32)
    print(f"{'LLaMA-2-7B train, bf16, seq 4096, 1 NPU (tokens/s)':52} {verdict(tokens, 2730, 0.20)}")
    print()
    print("Notes: the matmul references are single-kernel measurements (event timing, as here). ResNet-50's 1,678 img/s")
    print("is a one-card ModelZoo figure without a named chip; npusim's step excludes the host data pipeline. The")
    print("LLaMA reference is per NPU of an 8-NPU tensor-parallel run (its per-NPU matmuls are 1/8 of the model, with")
    print("TP communication); npusim runs the whole model on one NPU without communication, the work per token is")
    print("the same, but the shapes and the absence of collectives differ. With --quick the LLaMA figure scales a")
    print("4-layer estimate to 32 layers.")


if __name__ == "__main__":
    main()
