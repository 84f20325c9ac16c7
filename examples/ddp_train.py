"""Data-parallel training on simulated NPUs, launched exactly as on an Ascend server.

    torchrun --nproc_per_node=2 examples/ddp_train.py      # or torch_npu_run, its torch_npu alias

Each rank takes the NPU of its LOCAL_RANK, joins the ``hccl`` process group and trains a small MLP
with DistributedDataParallel: gradients are all-reduced in buckets during backward on the HCCL
stream, so rank 0's report shows how much of the communication the backward pass hides.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import npusim


def build_model(width: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[layer for _ in range(4) for layer in (nn.Linear(width, width), nn.ReLU())],
                         nn.Linear(width, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.npu.set_device(local_rank % torch.npu.device_count())
    dist.init_process_group("hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("npu", torch.npu.current_device())

    model = DistributedDataParallel(build_model(args.width).to(device), bucket_cap_mb=4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(100 + rank)
    for step in range(args.steps):
        if step == 1:  # the first step also builds DDP's buckets
            torch.npu.synchronize()
            npusim.reset_performance_report()
        inputs = torch.randn(args.batch, args.width, generator=generator).to(device)
        labels = torch.randint(0, 10, (args.batch,), generator=generator).to(device)
        loss = nn.functional.cross_entropy(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
    torch.npu.synchronize()
    if rank == 0:
        report = npusim.performance_report(steps=max(1, args.steps - 1))
        communication = report.get("communication", {})
        print(f"world {world}: {report['step_s'] * 1e3:.3f} ms per step on {report['chip']}; "
              f"communication {communication.get('communication_s', 0) * 1e3:.3f} ms, "
              f"{communication.get('overlap_s', 0) * 1e3:.3f} ms overlapped with compute", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
