"""All-reduce over the hccl backend: host throughput against Gloo, and the modelled HCCL figures.

1. Host throughput: two ranks all-reduce 64 MiB of float32, alternately over ``hccl`` (npu
   tensors, moved by Gloo on zero-copy CPU aliases) and over ``gloo`` (CPU tensors), in the same
   processes and the same "cpu:gloo,npu:hccl" group. Ratio = Gloo time / hccl time (throughput of
   hccl relative to Gloo); target >= 0.9x.
2. The collective model: the modelled 8-NPU all-reduce bus bandwidth of a 910B server at 64 and
   256 MiB against the published ~126 GB/s (ascend-hardware.md §3.3); target within 20%.
3. An 8-rank DDP step (torchrun --nproc_per_node=8 examples/ddp_train.py): the share of the
   modelled communication that backward hides (skip with --no-ddp).

    python bench/bench_allreduce.py [--iterations 10] [--no-ddp]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time

import _common

PUBLISHED_BUSBW_GBPS = 126.0
MESSAGE_BYTES = 64 << 20


def worker(iterations: int) -> None:
    _common.ensure_npusim_on_path()
    import torch
    import torch.distributed as dist

    import npusim  # noqa: F401

    torch.npu.set_device(0)
    dist.init_process_group("cpu:gloo,npu:hccl")
    elements = MESSAGE_BYTES // 4
    on_npu = torch.ones(elements, device="npu")
    on_cpu = torch.ones(elements)
    times = {"hccl": [], "gloo": []}
    for iteration in range(iterations + 2):
        for name, tensor in (("hccl", on_npu), ("gloo", on_cpu)):
            if name == "hccl":
                dist.barrier(device_ids=[0])  # both ranks start the pair together
            start = time.perf_counter()
            dist.all_reduce(tensor)
            elapsed = time.perf_counter() - start
            if iteration >= 2:  # warm-up: connections and first-touch of the buffers
                times[name].append(elapsed)
    if dist.get_rank() == 0:
        print(f"RESULT {statistics.median(times['hccl'])} {statistics.median(times['gloo'])}", flush=True)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def host_throughput(iterations: int) -> tuple[float, float]:
    port = str(free_port())
    processes = []
    for rank in range(2):
        env = _common.subprocess_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2", RANK=str(rank),
                                     OMP_NUM_THREADS="1")
        processes.append(subprocess.Popen([sys.executable, __file__, "--worker", "--iterations", str(iterations)],
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=600) for p in processes]
    for process, (out, err) in zip(processes, outputs):
        if process.returncode != 0:
            raise SystemExit(f"a rank failed:\n{err[-3000:]}")
    line = next(l for l in outputs[0][0].splitlines() if l.startswith("RESULT "))
    hccl, gloo = (float(v) for v in line.split()[1:])
    return hccl, gloo


def modelled_bus_bandwidth() -> list[tuple[int, float, str]]:
    _common.ensure_npusim_on_path()
    import npusim  # noqa: F401
    from npusim.distributed import price_collective

    rows = []
    for size in (MESSAGE_BYTES, 256 << 20):
        _, algorithm, busbw = price_collective("allreduce", size, world_size=8, ranks_per_server=8)
        rows.append((size, busbw / 1e9, algorithm))
    return rows


def ddp_overlap() -> str | None:
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=8", f"--master_port={free_port()}",
               os.path.join(_common.EXAMPLES_DIR, "ddp_train.py"), "--steps", "3", "--width", "2048",
               "--batch", "256"]
    done = subprocess.run(command, env=_common.subprocess_env(), capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        print(done.stderr[-3000:])
        return None
    return next((l for l in done.stdout.splitlines() if l.startswith("world ")), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-ddp", action="store_true")
    parser.add_argument("--quick", action="store_true", help="3 iterations, no DDP step")
    args = parser.parse_args()
    if args.quick:
        args.iterations, args.no_ddp = min(args.iterations, 3), True
    if args.worker:
        worker(args.iterations)
        return
    print(f"npusim from {_common.npusim_location()}")
    hccl, gloo = host_throughput(args.iterations)
    ratio = gloo / hccl
    print(f"64 MiB all-reduce, 2 ranks, median of {args.iterations}: hccl {hccl * 1e3:.1f} ms "
          f"({MESSAGE_BYTES / hccl / 1e9:.2f} GB/s), gloo {gloo * 1e3:.1f} ms ({MESSAGE_BYTES / gloo / 1e9:.2f} GB/s)")
    rows = modelled_bus_bandwidth()
    errors = []
    for size, busbw, algorithm in rows:
        error = (busbw - PUBLISHED_BUSBW_GBPS) / PUBLISHED_BUSBW_GBPS
        errors.append(abs(error))
        print(f"modelled 8x910B all-reduce, {size >> 20} MiB: bus bandwidth {busbw:.1f} GB/s ({algorithm}); "
              f"published ~{PUBLISHED_BUSBW_GBPS:.0f} GB/s; error {error * 100:+.1f}%")
    if not args.no_ddp:
        line = ddp_overlap()
        print(f"8-rank DDP step: {line}" if line else "8-rank DDP step: failed")
        match = re.search(r"communication ([\d.]+) ms, ([\d.]+) ms overlapped", line or "")
        if match and float(match.group(1)) > 0:
            print(f"  share of communication hidden behind compute: "
                  f"{float(match.group(2)) / float(match.group(1)) * 100:.0f}%")
    # Throughput target: hccl >= 0.9x Gloo, i.e. time ratio hccl/gloo <= 1/0.9.
    print(f"TARGET all-reduce host throughput hccl/gloo: {ratio:.2f}x (target >= 0.9x) "
          f"{'MET' if ratio >= 0.9 else 'MISSED'}")
    print(f"TARGET modelled 8-NPU bus bandwidth error: {max(errors) * 100:.1f}% (target <= 20%) "
          f"{'MET' if max(errors) <= 0.2 else 'MISSED'}")


if __name__ == "__main__":
    main()
