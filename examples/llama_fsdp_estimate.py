"""Estimate a LLaMA-2-7B FSDP training step on 8 and 64 Ascend 910B NPUs, from one process.

``npusim.estimate(world_size=W)`` runs the program as rank 0 of W ranks: the model is built on the
simulated NPU with shapes but no data, PyTorch's FSDP2 (``fully_shard``) shards it over a device
mesh of W NPUs, and every all-gather and reduce-scatter goes through the ``hccl`` backend, which
checks it and prices it with the collective model (HCCS full mesh inside an 8-NPU server, RoCE
between servers) on the HCCL stream, where it overlaps compute as on the chip. No data moves and
no other process runs. The report gives the step time, the communication time and how much of it
compute hides, and the per-NPU device memory.

    python examples/llama_fsdp_estimate.py [--world-sizes 8 64] [--layers 32] [--seq 4096] [--batch 1]
"""

import argparse
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

import npusim

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from llama_model import Llama, parameter_count  # noqa: E402


def estimate_fsdp_step(world_size: int, layers: int = 32, seq: int = 4096, batch: int = 1,
                       ranks_per_server: int = 8) -> dict:
    """Two FSDP steps as rank 0 of `world_size`; returns the report of the second."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    import gc

    gc.collect()
    torch.npu.empty_cache()  # a previous estimate in this process leaves cached blocks
    with npusim.estimate(world_size=world_size, ranks_per_server=ranks_per_server), torch.device("npu"):
        model = Llama(layers=layers)
        parameters = parameter_count(model)
        mesh = init_device_mesh("npu", (world_size,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        tokens = torch.randint(0, 32000, (batch, seq + 1))
        for step in range(2):  # the first step also creates the optimizer states
            if step == 1:
                torch.npu.synchronize()
                npusim.reset_performance_report()
                torch.npu.reset_peak_memory_stats()
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            del logits, loss
        torch.npu.synchronize()
        report = npusim.performance_report(steps=1)
        report["parameters"] = parameters
        report["tokens_per_rank"] = batch * seq
        report["peak_reserved_bytes"] = torch.npu.max_memory_reserved()
        report["capacity_bytes"] = torch.npu.get_device_properties(0).total_memory
        del model, optimizer
    return report


def describe(world_size: int, report: dict) -> list[str]:
    gib = 2**30
    step = report["step_s"]
    lines = [
        f"{world_size} NPUs ({report['chip']}, {max(1, world_size // 8)} server(s)): step {step * 1e3:.0f} ms, "
        f"{report['tokens_per_rank'] / step:.0f} tokens/s per NPU, MFU {report['mfu'] * 100:.1f}%"
    ]
    communication = report.get("communication")
    if communication:
        lines.append(
            f"  communication {communication['communication_s'] * 1e3:.0f} ms "
            f"({communication['overlap_s'] * 1e3:.0f} ms hidden behind compute, "
            f"{communication['overlap_fraction'] * 100:.0f}%)"
        )
        for op in communication["operations"][:3]:
            lines.append(
                f"    {op['name']}: {op['calls']} calls, {op['time_s'] * 1e3:.0f} ms, {op['algorithm']}, "
                f"bus bandwidth {op['bus_bandwidth_gbps']:.0f} GB/s at {op['largest_bytes'] / 2**20:.0f} MiB"
            )
    lines.append(
        f"  per-NPU device memory: {report['peak_memory_bytes'] / gib:.1f} GiB allocated, "
        f"{report['peak_reserved_bytes'] / gib:.1f} GiB reserved of {report['capacity_bytes'] / gib:.1f} GiB"
    )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    print(f"LLaMA-2-7B-shaped model, {args.layers} layers, sequence {args.seq}, micro-batch {args.batch} per NPU, "
          "FSDP2 (fully_shard per decoder layer), bf16 parameters, fp32 reduce, AdamW")
    for world_size in args.world_sizes:
        started = time.perf_counter()
        report = estimate_fsdp_step(world_size, args.layers, args.seq, args.batch)
        for line in describe(world_size, report):
            print(line)
        print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time, one process)")


if __name__ == "__main__":
    main()
