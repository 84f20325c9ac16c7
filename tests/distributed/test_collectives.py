"""Every hccl operation against the same operation over Gloo on CPU tensors, in one job per world size.

Each rank runs an npu tensor through the hccl backend and the equal CPU tensor through Gloo in the
same "cpu:gloo,npu:hccl" group (dist_worker.scenario_ops) and reports what differed.
"""

import pytest

from dist_harness import run_job


@pytest.fixture(scope="module")
def two_ranks():
    return run_job("ops", 2, timeout=150)


@pytest.mark.parametrize("world", [2, 4])
def test_every_operation_matches_gloo(world, two_ranks):
    # Four ranks run the same operations on fewer dtypes (float32, bfloat16, int64) to stay fast.
    results = two_ranks if world == 2 else run_job("ops", world, timeout=150, env={"OPS_DTYPES": "short"})
    for rank, (code, result, err) in enumerate(results):
        assert code == 0, f"rank {rank} failed:\n{err[-3000:]}"
        assert result["failures"] == [], f"rank {rank}: {result['failures']}"
        assert result["checks"] >= (80 if world == 2 else 40)
        assert {"allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "reduce", "send_recv"} <= set(
            result["operations"])


def test_errors_are_torch_npu_texts(two_ranks):
    code, result, err = two_ranks[0]
    assert code == 0, err[-2000:]
    errors = result["errors"]
    assert errors["band"].startswith("RuntimeError: Cannot use ReduceOp.BAND with HCCL")
    assert "ERR02007 DIST feature not supported" in errors["band"]
    assert "HCCL allreduce: Unsupported data type at::kDouble" in errors["double"]
    assert "HCCL allreduce: Unsupported data type at::ScalarType::UInt32" in errors["uint32"]
    assert "output tensor size must be equal to world_size times input tensor size" in errors["size"]
    assert "ERR02001 DIST invalid parameter" in errors["size"]
    assert "Tensors must be contiguous" in errors["noncontiguous"]
    # A CPU tensor given to a group that has only hccl names the device it lacks.
    assert "device type cpu" in errors["cpu_to_hccl"]
    assert "was aborted or shut down" in errors["aborted"]
