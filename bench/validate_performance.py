"""Validation of npusim's estimates against published Ascend 910B figures, each set up as published.

Everything runs through npusim itself (operator executor, placement table, performance model,
simulated timeline) in estimate-only mode: no data is computed, so the whole check takes well
under a minute. Each row prints estimate, reference, error and PASS/FAIL against its target.

References (shared/reference/ascend-hardware.md and the issue that set them):
1. Square matmul on a 910B2, 30 back-to-back calls between two events as the reference timed
   them (zzc0721/torch-performance-test-data #109, §3.3): fp16 / bf16 / fp32 at 1024..10240^3.
   Best shape over M, N, K in [1024, 20480] (limulidae, §3.3): bf16 328, fp32 87 TFLOPS.
   Target: within 8%.
2. An attention loop on a 910B2, fp16, one head of dimension 128: q @ k^T, x scale, softmax, @ v,
   timed between events per iteration. Target: within 15%.
3. torch_npu's fused attention on a 910B2, fp16, one head of dimension 128, timed as pto-isa's
   torch_jit harness times it (demos/torch_jit/flash_atten/fa_benchmark.py: warm-up calls, then N
   back-to-back calls between two events, the end event after a synchronize):
   - npu_fused_infer_attention_score (BSH, no mask), the harness's 16 shapes Sq x Sk (zouzias/
     pto-isa-mirror demos/torch_jit/flash/README.md @ 8d8c14a80f21): 67-90 us per call, almost all
     of it the host's launch of the operator (Calibration.h kDispatchAttentionExtraNs);
   - npu_fusion_attention forward, no mask, S0 = S1 = 4096 / 8192 / 16384 / 32768: the torch_npu
     column of pto-isa's "910B2 Multi-Core Comparison" (hw-native-sys/pto-isa kernels/manual/common/
     flash_atten/README.md @ 9e050352009a; the operator is not named there): 118.3 / 353.1 / 1118.5 /
     3646.2 us, device-bound.
   Target: within 15% (as the attention loop).

The end-to-end rows (4, 5) name a server, never its NPU: "Atlas 900 A2 PoDc" / "Atlas 800T A2". Huawei's
Atlas 800T A2 technical white paper (revision 16, e.huawei.com/cn/documents/products/computing/
b0b253c4d5da4e05ba80a39e3dc65fd2, printed pp. 36-37 as quoted in public notes) offers the server with
either of two NPUs: 313 or 376 TFLOPS FP16 per processor (2.504 / 3.008 PFLOPS per server, 64 GB at
1.6 TB/s). Huawei's own MindStudio model (Ascend/msmodeling tensor_cast/device.py @ 1e5a50b1:
ATLAS_800_A2_313T_64G and _376T_64G, bf16 294.9 / 353.9 TFLOPS) makes them the 20-core and the 24-core
part at 1.8 GHz: npusim's Ascend910B3 and Ascend910B2 chip files. Which one the publications ran on is
not published, so each end-to-end row is estimated on both (a subprocess per chip) and judged on each;
nothing is fitted to either. The kernel rows (1-3) name the 910B2 and run on it.

4. ResNet-50 training per NPU as Ascend's ModelZoo PyTorch recipe runs it (examples/resnet50_estimate.py:
   torchvision's v1.5 network, 224x224, batch 256, apex AMP O2 with fp32 batch norm and fused SGD on
   fp32 master weights): 14,321 images/s on an 8-NPU Atlas 900 A2 PoDc, 1,790 per NPU (§3.2). Target:
   within 20% (the end-to-end target this row had in the first validation).
5. LLaMA pretraining per NPU as MindSpeed-LLM publishes it (examples/llama_estimate.py has the
   setups and the pipeline formula: torch_npu's fusion attention, RMSNorm, rotary and SwiGLU
   kernels, fp32 main_grad accumulation, pipeline send/recv and the distributed optimizer's
   reduce-scatter / all-gather priced by npusim's HCCL collective model): LLaMA-2-7B TP1 PP2 DP4 seq 4096 mbs 1 gbs 256 bf16;
   LLaMA-7B TP1 PP8 seq 2048 mbs 4 gbs 256 fp16; LLaMA-13B TP1 PP8 seq 2048 mbs 1 gbs 128 bf16 (its script; the README table says FP16).
   Target: within 12%.

Run: ``PYTHONPATH=python python3 bench/validate_performance.py`` (exit status 1 if a row fails).
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import sys
import time

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

import npusim  # noqa: E402
from llama_estimate import timed_seconds  # noqa: E402  (examples/, on the path above)

SQUARE = {
    "float16": {1024: 98.1, 2048: 251.0, 4096: 314.5, 8192: 305.5, 10240: 274.8},
    "bfloat16": {1024: 99.9, 2048: 248.3, 4096: 315.4, 8192: 301.2, 10240: 300.9},
    "float32": {1024: 46.3, 2048: 76.9, 4096: 84.5, 8192: 80.4, 10240: 79.7},
}
BEST = {"bfloat16": 328.0, "float32": 87.0}
ATTENTION_US = {(128, 1024): 60.1, (1024, 1024): 65.4, (512, 4096): 63.3, (1024, 8192): 79.3}
FUSED_ATTENTION_US = {4096: 118.3, 8192: 353.1, 16384: 1118.5, 32768: 3646.2}
INFER_ATTENTION_US = {
    (128, 1024): 68.735, (256, 1024): 68.513, (512, 1024): 67.892, (1024, 1024): 70.002,
    (128, 2048): 74.909, (256, 2048): 80.121, (512, 2048): 73.713, (1024, 2048): 70.119,
    (128, 4096): 71.704, (256, 4096): 70.272, (512, 4096): 71.013, (1024, 4096): 70.864,
    (128, 8192): 67.072, (256, 8192): 68.459, (512, 8192): 72.393, (1024, 8192): 90.021,
}
CALLS = 30


class Rows:
    def __init__(self):
        self.failed = 0
        print(f"{'check':80} {'estimate':>10} {'reference':>10} {'error':>8}")

    def add(self, label: str, estimate: float, reference: float, tolerance: float) -> None:
        error = (estimate - reference) / reference
        ok = abs(error) <= tolerance
        self.failed += not ok
        print(f"{label:80} {estimate:10.1f} {reference:10.1f} {error * 100:+7.1f}%  {'PASS' if ok else 'FAIL'}")


def matmul_tflops(m: int, n: int, k: int, dtype: torch.dtype) -> float:
    a = torch.empty(m, k, device="npu", dtype=dtype)
    b = torch.empty(k, n, device="npu", dtype=dtype)
    a @ b  # warm

    def loop():
        for _ in range(CALLS):
            a @ b

    return 2 * m * n * k * CALLS / timed_seconds(loop) / 1e12


def attention_us(sq: int, sk: int, iterations: int = 20) -> float:
    q = torch.empty(sq, 128, device="npu", dtype=torch.float16)
    k = torch.empty(sk, 128, device="npu", dtype=torch.float16)
    v = torch.empty(sk, 128, device="npu", dtype=torch.float16)
    scale = 128 ** -0.5

    def loop():
        for _ in range(iterations):
            scores = (q @ k.transpose(0, 1)) * scale
            torch.softmax(scores, dim=-1) @ v

    loop()
    return timed_seconds(loop) / iterations * 1e6


def harness_us(call, iterations: int, warmup: int) -> float:
    """Per-call time as pto-isa's torch_jit harness measures it: warm-up calls, then back-to-back calls
    between two events, the end event recorded after a synchronize."""
    for _ in range(warmup):
        call()
    torch.npu.synchronize()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        call()
    torch.npu.synchronize()
    end.record()
    return start.elapsed_time(end) / iterations * 1e3


def fused_attention_us(sequence: int) -> float:
    import torch_npu

    q = torch.empty(1, 1, sequence, 128, device="npu", dtype=torch.float16)
    k, v = torch.empty_like(q), torch.empty_like(q)
    return harness_us(lambda: torch_npu.npu_fusion_attention(q, k, v, 1, "BNSD", scale=128 ** -0.5), 10, 2)


def infer_attention_us(sq: int, sk: int) -> float:
    import torch_npu

    q = torch.empty(1, sq, 128, device="npu", dtype=torch.float16)
    k = torch.empty(1, sk, 128, device="npu", dtype=torch.float16)
    v = torch.empty_like(k)
    return harness_us(lambda: torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=1, input_layout="BSH", scale=128 ** -0.5, next_tokens=65535), 50, 10)


KERNEL_CHIP = "Ascend910B2"  # the chip the kernel references name
# The two NPUs the Atlas 800T A2 / Atlas 900 A2 PoDc ship with (white paper: 313 or 376 TFLOPS FP16).
SERVER_OPTIONS = (("Ascend910B3", "313 T option, 20 AICs"), ("Ascend910B2", "376 T option, 24 AICs"))


def end_to_end(include_llama: bool) -> dict:
    """The end-to-end figures on the chip this process simulates (NPUSIM_SOC)."""
    import resnet50_estimate

    figures = {"resnet50": {"value": 256 / resnet50_estimate.step_seconds(256),
                            "reference": resnet50_estimate.REFERENCE_IMAGES_PER_S, "detail": ""}}
    if include_llama:
        import llama_estimate

        for key in ("llama2-7b", "llama-7b", "llama-13b"):
            s = llama_estimate.SETUPS[key]
            r = llama_estimate.estimate(s)
            detail = (f"layer {r['layer_s'] * 1e3:.1f} ms, stages {r['first_stage_s'] * 1e3:.0f}/"
                      f"{r['last_stage_s'] * 1e3:.0f} ms, pipeline {r['pipeline_s']:.2f} s, optimizer "
                      f"{r['optimizer_s'] * 1e3:.0f} ms, PP send/recv {r['p2p_s'] * 1e3:.2f} ms per micro-batch, "
                      f"DP exposed {r['dp_comm_s'] * 1e3:.0f} ms")
            figures[key] = {"value": r["tokens_per_s_per_npu"], "reference": s.reference_tokens_per_s,
                            "detail": detail, "label": f"{s.name} TP{s.tp} PP{s.pp} DP{s.dp} seq {s.seq} "
                                                        f"mbs {s.micro_batch} (tok/s/NPU)"}
    return figures


def run_on_chip(chip: str, include_llama: bool) -> dict:
    import json
    import os
    import subprocess

    env = dict(os.environ, NPUSIM_SOC=chip)
    command = [sys.executable, "-W", "ignore", str(pathlib.Path(__file__).resolve()), "--end-to-end-json"]
    if not include_llama:
        command.append("--skip-llama")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the end-to-end estimates on {chip} failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-llama", action="store_true", help="leave out the LLaMA rows (the slowest part)")
    parser.add_argument("--end-to-end-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.end_to_end_json:
        import json

        print(json.dumps(end_to_end(not args.skip_llama)))
        return 0
    if npusim_chip() != KERNEL_CHIP:
        print(f"the kernel references were measured on an {KERNEL_CHIP}; run without NPUSIM_SOC")
        return 2
    started = time.perf_counter()
    rows = Rows()
    with npusim.estimate():
        for dtype_name, points in SQUARE.items():
            dtype = getattr(torch, dtype_name)
            for n, reference in points.items():
                rows.add(f"{dtype_name} matmul {n}^3, {CALLS} calls (TFLOPS)", matmul_tflops(n, n, n, dtype),
                         reference, 0.08)
        sizes = (1024, 2048, 4096, 6144, 8192, 12288, 16384, 20480)
        for dtype_name, reference in BEST.items():
            dtype = getattr(torch, dtype_name)
            best, shape = max((matmul_tflops(m, n, k, dtype), (m, n, k))
                              for m, n, k in itertools.product(sizes, repeat=3))
            rows.add(f"{dtype_name} best matmul over M,N,K in [1K,20K] (TFLOPS)", best, reference, 0.08)
            print(f"    best shape {shape}")
        for (sq, sk), reference in ATTENTION_US.items():
            rows.add(f"attention loop fp16 d=128, Sq x Sk {sq}x{sk} (us/iter)", attention_us(sq, sk), reference, 0.15)
        for (sq, sk), reference in INFER_ATTENTION_US.items():
            rows.add(f"npu_fused_infer_attention_score fp16 d=128, Sq x Sk {sq}x{sk} (us/call)",
                     infer_attention_us(sq, sk), reference, 0.15)
        for sequence, reference in FUSED_ATTENTION_US.items():
            rows.add(f"npu_fusion_attention fwd fp16 d=128, S {sequence} (us/call)", fused_attention_us(sequence),
                     reference, 0.15)
    by_chip = {chip: run_on_chip(chip, not args.skip_llama) for chip, _ in SERVER_OPTIONS}
    labels = {"resnet50": "ResNet-50 AMP O2 batch 256 (images/s/NPU)"}
    for key in by_chip[SERVER_OPTIONS[0][0]]:
        for chip, option in SERVER_OPTIONS:
            figure = by_chip[chip][key]
            label = labels.get(key, figure.get("label", key))
            rows.add(f"{label} [{option}]", figure["value"], figure["reference"], 0.20 if key == "resnet50" else 0.12)
            if figure["detail"]:
                print(f"    {figure['detail']}")
    print(f"{rows.failed} row(s) outside their target; {time.perf_counter() - started:.1f} s")
    return 1 if rows.failed else 0


def npusim_chip() -> str:
    from npusim import _C

    return str(_C._chip_info()["soc_name"])


if __name__ == "__main__":
    sys.exit(main())
