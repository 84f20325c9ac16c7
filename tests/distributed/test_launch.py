"""Launchers and topologies: torchrun, a two-server job on loopback addresses, estimate-only worlds."""

import json
import subprocess
import sys
from pathlib import Path

import npusim  # noqa: F401

from dist_harness import environment, free_port, run_job

ROOT = Path(__file__).resolve().parents[2]


def test_torchrun_launches_the_ddp_example():
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={free_port()}",
               str(ROOT / "examples" / "ddp_train.py"), "--steps", "2", "--width", "256"]
    done = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step 1: loss" in done.stdout
    assert "overlapped with compute" in done.stdout


def test_torch_npu_run_is_an_alias_of_torchrun():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'torch_npu_run = "torch.distributed.run:main"' in text


def test_two_servers_on_loopback_addresses(tmp_path):
    # The rank table says which ranks share a server (no LOCAL_WORLD_SIZE): 2 servers of 2 NPUs.
    table = {"version": "1.0", "server_count": "2", "status": "completed", "server_list": [
        {"server_id": f"127.0.0.{s + 1}", "device": [
            {"device_id": str(d), "device_ip": f"192.168.{s}.{d}", "rank_id": str(2 * s + d)} for d in range(2)]}
        for s in range(2)]}
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table))

    def server(rank):
        return {"HCCL_IF_IP": "127.0.0.1" if rank < 2 else "127.0.0.2", "RANK_TABLE_FILE": str(path),
                "LOCAL_RANK": str(rank % 2)}

    results = run_job("servers", 4, timeout=120, per_rank_env=server)
    for rank, (code, result, err) in enumerate(results):
        assert code == 0, f"rank {rank}: {err[-3000:]}"
        assert result["sum"] == 10.0
        assert result["algorithm"] == "hierarchical(mesh,halving-doubling)"
    assert len({tuple(r[1]["grads"]) for r in results}) == 1  # DDP kept the ranks in step


def test_estimate_prices_a_world_from_one_process():
    import torch
    import torch.distributed as dist

    import npusim
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    reports = {}
    for world in (8, 64):
        with npusim.estimate(world_size=world), torch.device("npu"):
            assert dist.get_world_size() == world
            model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)])
            mesh = init_device_mesh("npu", (world,))
            for layer in model:
                fully_shard(layer, mesh=mesh)
            fully_shard(model, mesh=mesh)
            npusim.reset_performance_report()
            model(torch.randn(64, 1024)).sum().backward()
            torch.npu.synchronize()
            reports[world] = npusim.performance_report()["communication"]
            del model
        assert not dist.is_initialized()
    small, large = reports[8], reports[64]
    names = {op["name"]: op for op in small["operations"]}
    assert {"allgather", "reduce_scatter"} <= set(names)
    assert names["allgather"]["algorithm"] == "mesh"
    assert {op["name"]: op for op in large["operations"]}["allgather"]["algorithm"].startswith("hierarchical")
    assert large["communication_s"] > small["communication_s"]
