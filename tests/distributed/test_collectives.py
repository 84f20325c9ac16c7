"""Every hccl operation against the same operation over Gloo on CPU tensors, in one job per world size.

Each rank runs an npu tensor through the hccl backend and the equal CPU tensor through Gloo in the
same "cpu:gloo,npu:hccl" group (dist_worker.scenario_ops) and reports what differed.
"""

import pytest

from dist_harness import run_job


@pytest.mark.parametrize("world", [2, 4])
def test_every_operation_matches_gloo(world):
    results = run_job("ops", world, timeout=150)
    for rank, (code, result, err) in enumerate(results):
        assert code == 0, f"rank {rank} failed:\n{err[-3000:]}"
        assert result["failures"] == [], f"rank {rank}: {result['failures']}"
        assert result["checks"] >= 80
        assert {"allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "reduce", "send_recv"} <= set(
            result["operations"])


def test_errors_are_torch_npu_texts():
    (code, result, err), _ = run_job("ops", 2, timeout=150)[:2]
    assert code == 0, err[-2000:]
    errors = result["errors"]
    assert errors["band"].startswith("RuntimeError: Cannot use ReduceOp.BAND with HCCL")
    assert "ERR02007 DIST feature not supported" in errors["band"]
    assert "HCCL allreduce: Unsupported data type at::kDouble" in errors["double"]
    assert "output tensor size must be equal to world_size times input tensor size" in errors["size"]
    assert "ERR02001 DIST invalid parameter" in errors["size"]
    assert "Tensors must be contiguous" in errors["noncontiguous"]
    # A CPU tensor given to a group that has only hccl names the device it lacks.
    assert "device type cpu" in errors["cpu_to_hccl"]
