"""RANK_TABLE_FILE: the rank table JSON of Ascend clusters (version 1.0), read and checked.

The table lists the servers and, per server, its NPUs with their global rank::

    {"version": "1.0", "server_count": "2", "status": "completed",
     "server_list": [{"server_id": "127.0.0.1",
                      "device": [{"device_id": "0", "device_ip": "192.168.1.10", "rank_id": "0"}, ...]},
                     ...]}

npusim uses it as the real stack does: it fixes the world size, which ranks share a server
(the collective model prices HCCS inside a server and RoCE between servers), and, when
MASTER_ADDR is not set, the first server's address as the rendezvous host.
"""

from __future__ import annotations

import dataclasses
import json
import os

from npusim._error_code import ErrCode, dist_error

__all__ = ["RankTable", "load_rank_table"]


@dataclasses.dataclass(frozen=True)
class RankTable:
    path: str
    servers: list[str]  # server_id per server, in table order
    server_of_rank: dict[int, int]  # global rank -> index into servers
    device_of_rank: dict[int, int]

    @property
    def world_size(self) -> int:
        return len(self.server_of_rank)

    @property
    def ranks_per_server(self) -> int:
        counts = [list(self.server_of_rank.values()).count(i) for i in range(len(self.servers))]
        return max(counts) if counts else 1


def _bad(path: str, what: str) -> ValueError:
    return ValueError(f"RANK_TABLE_FILE {path} is not a valid rank table: {what}." + dist_error(ErrCode.VALUE))


def _as_int(path: str, value, where: str) -> int:
    try:
        return int(str(value), 10)
    except ValueError:
        raise _bad(path, f"{where} must be an integer, got {value!r}") from None


def load_rank_table(path: str, device_count: int) -> RankTable:
    """Parse and check the table; `device_count` NPUs exist per server."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"RANK_TABLE_FILE {path} does not exist." + dist_error(ErrCode.NOT_FOUND))
    try:
        with open(path, encoding="utf-8") as handle:
            table = json.load(handle)
    except json.JSONDecodeError as error:
        raise _bad(path, f"it is not JSON ({error})") from None
    if not isinstance(table, dict):
        raise _bad(path, "the top level must be an object")
    status = table.get("status")
    if status is not None and status != "completed":
        raise _bad(path, f'"status" is {status!r}; the table must be "completed"')
    server_list = table.get("server_list")
    if not isinstance(server_list, list) or not server_list:
        raise _bad(path, '"server_list" must be a non-empty list')
    if "server_count" in table and _as_int(path, table["server_count"], '"server_count"') != len(server_list):
        raise _bad(path, f'"server_count" is {table["server_count"]} but "server_list" has {len(server_list)} servers')
    servers: list[str] = []
    server_of_rank: dict[int, int] = {}
    device_of_rank: dict[int, int] = {}
    for index, server in enumerate(server_list):
        if not isinstance(server, dict) or "server_id" not in server:
            raise _bad(path, f"server {index} has no \"server_id\"")
        server_id = str(server["server_id"])
        devices = server.get("device")
        if not isinstance(devices, list) or not devices:
            raise _bad(path, f'server {server_id} has no "device" list')
        seen_devices: set[int] = set()
        for device in devices:
            if not isinstance(device, dict) or "device_id" not in device or "rank_id" not in device:
                raise _bad(path, f'every device of server {server_id} needs "device_id" and "rank_id"')
            device_id = _as_int(path, device["device_id"], f"device_id on server {server_id}")
            rank = _as_int(path, device["rank_id"], f"rank_id on server {server_id}")
            if not 0 <= device_id < device_count:
                raise _bad(
                    path,
                    f"server {server_id} names device {device_id}, but a server has {device_count} NPUs "
                    f"(device ids 0 to {device_count - 1}; NPUSIM_DEVICE_COUNT)",
                )
            if device_id in seen_devices:
                raise _bad(path, f"server {server_id} lists device {device_id} twice")
            if rank in server_of_rank:
                raise _bad(path, f"rank_id {rank} appears twice")
            seen_devices.add(device_id)
            server_of_rank[rank] = index
            device_of_rank[rank] = device_id
        servers.append(server_id)
    expected = set(range(len(server_of_rank)))
    if set(server_of_rank) != expected:
        missing = sorted(expected - set(server_of_rank))
        raise _bad(path, f"rank ids must run from 0 to {len(server_of_rank) - 1}; missing {missing}")
    return RankTable(path=path, servers=servers, server_of_rank=server_of_rank, device_of_rank=device_of_rank)
