"""HCCL variables and rank tables: validated with errors that name the variable and the value."""

import json

import pytest

import npusim  # noqa: F401
from npusim.distributed._environment import read_environment
from npusim.distributed._rank_table import load_rank_table


def test_defaults(monkeypatch):
    for name in ("HCCL_CONNECT_TIMEOUT", "HCCL_EXEC_TIMEOUT", "HCCL_EVENT_TIMEOUT", "HCCL_BUFFSIZE", "HCCL_IF_IP",
                 "HCCL_SOCKET_IFNAME", "HCCL_SOCKET_FAMILY", "HCCL_IF_BASE_PORT", "TORCH_HCCL_BLOCKING_WAIT",
                 "TORCH_HCCL_ASYNC_ERROR_HANDLING", "HCCL_ASYNC_ERROR_HANDLING", "HCCL_BLOCKING_WAIT"):
        monkeypatch.delenv(name, raising=False)
    env = read_environment()
    assert (env.connect_timeout_s, env.exec_timeout_s, env.event_timeout_s) == (120, 1836, 1868)
    assert env.buffer_bytes == 200 << 20 and env.if_base_port == 60000
    assert env.async_error_handling == 1 and not env.blocking_wait


@pytest.mark.parametrize("name, value, words", [
    ("HCCL_CONNECT_TIMEOUT", "0", "from 1 to 2147483647"),
    ("HCCL_EXEC_TIMEOUT", "-1", "from 0 (never)"),
    ("HCCL_EXEC_TIMEOUT", "1.5", "whole number of seconds"),
    ("HCCL_BUFFSIZE", "big", "whole number of MB"),
    ("HCCL_IF_IP", "10.0.0.300", "IPv4 or IPv6 address"),
    ("HCCL_SOCKET_FAMILY", "AF_UNIX", "AF_INET or AF_INET6"),
    ("HCCL_IF_BASE_PORT", "70000", "1024 to 65520"),
    ("HCCL_SOCKET_IFNAME", "nosuchnic0", "none of these interfaces exists"),
    ("TORCH_HCCL_BLOCKING_WAIT", "yes", "one of 0, 1"),
    ("TORCH_HCCL_ASYNC_ERROR_HANDLING", "7", "one of 0, 1, 2, 3"),
])
def test_bad_values_name_the_variable(monkeypatch, name, value, words):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as caught:
        read_environment()
    assert f"{name} is set to '{value}'" in str(caught.value)
    assert words in str(caught.value)


def test_event_timeout_must_exceed_exec_timeout(monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "100")
    monkeypatch.setenv("HCCL_EVENT_TIMEOUT", "50")
    with pytest.raises(ValueError, match="HCCL_EVENT_TIMEOUT .* must be greater than HCCL_EXEC_TIMEOUT"):
        read_environment()


def test_good_values(monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "0")
    monkeypatch.setenv("HCCL_IF_IP", "127.0.0.2")
    monkeypatch.setenv("HCCL_BUFFSIZE", "64")
    monkeypatch.setenv("HCCL_SOCKET_IFNAME", "lo")
    env = read_environment()
    assert env.exec_timeout_s == 0 and env.if_ip == "127.0.0.2" and env.buffer_bytes == 64 << 20
    assert env.socket_ifname == ["lo"]


def _table(servers):
    return {"version": "1.0", "server_count": str(len(servers)), "status": "completed",
            "server_list": [{"server_id": sid, "device": [{"device_id": str(d), "device_ip": "1.1.1.1",
                                                          "rank_id": str(r)} for d, r in devices]}
                            for sid, devices in servers]}


def test_rank_table_servers_and_ranks(tmp_path):
    path = tmp_path / "table.json"
    path.write_text(json.dumps(_table([("127.0.0.1", [(0, 0), (1, 1)]), ("127.0.0.2", [(0, 2), (1, 3)])])))
    table = load_rank_table(str(path), 8)
    assert table.world_size == 4 and table.ranks_per_server == 2
    assert table.servers == ["127.0.0.1", "127.0.0.2"] and table.server_of_rank[3] == 1


@pytest.mark.parametrize("mutate, words", [
    (lambda t: t.update(status="initializing"), '"status" is'),
    (lambda t: t.update(server_count="3"), '"server_count" is 3'),
    (lambda t: t["server_list"][0]["device"][1].update(rank_id="5"), "rank ids must run from 0 to 1"),
    (lambda t: t["server_list"][0]["device"][1].update(device_id="0"), "lists device 0 twice"),
    (lambda t: t["server_list"][0].pop("device"), 'has no "device" list'),
])
def test_malformed_rank_tables(tmp_path, mutate, words):
    table = _table([("127.0.0.1", [(0, 0), (1, 1)])])
    mutate(table)
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    with pytest.raises(ValueError) as caught:
        load_rank_table(str(path), 8)
    assert "is not a valid rank table" in str(caught.value) and words in str(caught.value)


def test_rank_table_not_json_or_missing(tmp_path):
    path = tmp_path / "table.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="it is not JSON"):
        load_rank_table(str(path), 8)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_rank_table(str(tmp_path / "missing.json"), 8)


def test_is_hccl_available_and_torch_npu_distributed():
    import torch.distributed as dist

    import torch_npu.distributed

    assert dist.is_hccl_available() and torch_npu.distributed.is_hccl_available()
    assert "hccl" in dist.Backend.backend_list and dist.Backend.default_device_backend_map["npu"] == "hccl"
    assert torch_npu.distributed.ProcessGroupHCCL.__name__ == "ProcessGroupHCCL"
