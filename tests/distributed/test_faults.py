"""Faults end in clear torch_npu-style errors within the time limits, never in a hang."""

import json
import os

from dist_harness import run_job


def test_dead_rank_makes_the_survivor_raise_an_hccl_error():
    results = run_job("dead_rank", 2, timeout=60, env={"HCCL_EXEC_TIMEOUT": "5"})
    code, result, err = results[0]
    assert code == 0, err[-3000:]
    assert result["seconds"] < 8
    assert "DistBackendError" in result["error"]
    assert "HCCL" in result["error"] and "ERR02" in result["error"]
    assert results[1][0] == 3  # the rank that died


def test_hung_rank_times_out_after_hccl_exec_timeout():
    results = run_job("hung_rank", 2, timeout=60, env={"HCCL_EXEC_TIMEOUT": "3"})
    code, result, err = results[0]
    assert code == 0, err[-3000:]
    assert 2.5 < result["seconds"] < 8
    assert "Watchdog caught collective operation timeout" in result["error"]
    assert "ERR02011 DIST timeout error" in result["error"]


def test_unreachable_master_is_named():
    # Rank 1 alone: no rank 0 serves the store at MASTER_ADDR:MASTER_PORT.
    results = run_job("init_error", 1, timeout=60, env={"WORLD_SIZE": "2", "HCCL_CONNECT_TIMEOUT": "2"},
                      per_rank_env=lambda rank: {"RANK": "1"})
    code, result, err = results[0]
    assert code == 0, err[-3000:]
    assert "could not reach the rendezvous master" in result["error"], result["error"]
    assert result["seconds"] < 20


def test_bad_environment_fails_before_connecting():
    results = run_job("init_error", 1, timeout=60, env={"HCCL_EXEC_TIMEOUT": "soon"})
    assert "HCCL_EXEC_TIMEOUT is set to 'soon'" in results[0][1]["error"]
    assert "ERR02003 DIST invalid value" in results[0][1]["error"]


def test_rank_table_naming_a_missing_device(tmp_path):
    table = {"version": "1.0", "server_count": "1", "status": "completed",
             "server_list": [{"server_id": "127.0.0.1", "device": [
                 {"device_id": "0", "device_ip": "192.168.1.1", "rank_id": "0"},
                 {"device_id": "9", "device_ip": "192.168.1.2", "rank_id": "1"}]}]}
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table))
    results = run_job("init_error", 1, timeout=60, env={"RANK_TABLE_FILE": str(path), "WORLD_SIZE": "2"})
    error = results[0][1]["error"]
    assert "server 127.0.0.1 names device 9, but a server has 8 NPUs" in error
    assert os.path.basename(str(path)) in error
