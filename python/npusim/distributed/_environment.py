"""The HCCL environment variables, read and validated as the real stack reads them (contract §5.4).

Each bad value raises at process-group creation with the variable, the value and what is
accepted, so that a job fails at start instead of misbehaving later. Variables that only tune
real hardware (algorithm choice, RDMA retries, link selection) are accepted and noted in the
plog.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket

from npusim._error_code import ErrCode, dist_error

__all__ = ["HcclEnvironment", "read_environment", "TUNING_ONLY"]

# Defaults of CANN / torch_npu (contract §5.4).
DEFAULT_CONNECT_TIMEOUT_S = 120
DEFAULT_EXEC_TIMEOUT_S = 1836
DEFAULT_EVENT_TIMEOUT_S = 1868
DEFAULT_BUFFSIZE_MB = 200
DEFAULT_IF_BASE_PORT = 60000
_MAX_TIMEOUT_S = 2**31 - 1

TUNING_ONLY = (
    "HCCL_ALGO",
    "HCCL_RDMA_TIMEOUT",
    "HCCL_RDMA_RETRY_CNT",
    "HCCL_RDMA_TC",
    "HCCL_RDMA_SL",
    "HCCL_INTRA_ROCE_ENABLE",
    "HCCL_INTRA_PCIE_ENABLE",
    "HCCL_OP_EXPANSION_MODE",
    "HCCL_OP_RETRY_ENABLE",
    "HCCL_OP_RETRY_PARAMS",
    "HCCL_DFS_CONFIG",
    "HCCL_WHITELIST_DISABLE",
    "HCCL_WHITELIST_FILE",
    "HCCL_DETERMINISTIC",
    "HCCL_HOST_SOCKET_PORT_RANGE",
    "HCCL_NPU_SOCKET_PORT_RANGE",
    "P2P_HCCL_BUFFSIZE",
    "TORCH_HCCL_DESYNC_DEBUG",
    "TORCH_HCCL_ZERO_COPY",
)


@dataclasses.dataclass(frozen=True)
class HcclEnvironment:
    connect_timeout_s: int
    exec_timeout_s: int  # 0: never
    event_timeout_s: int  # 0: never
    buffer_bytes: int
    if_ip: str | None
    socket_ifname: list[str]
    socket_family: str | None
    if_base_port: int
    async_error_handling: int
    blocking_wait: bool
    exec_timeout_set: bool


def _fail(name: str, value: str, accepted: str) -> ValueError:
    return ValueError(f"{name} is set to '{value}', but {accepted}." + dist_error(ErrCode.VALUE))


def _integer(name: str, default: int, low: int, high: int, accepted: str) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        raise _fail(name, raw, accepted) from None
    if not low <= value <= high:
        raise _fail(name, raw, accepted)
    return value


def _flag(names: tuple[str, ...], default: int, allowed: tuple[int, ...]) -> int:
    for name in names:
        raw = os.environ.get(name)
        if raw is None or raw.strip() == "":
            continue
        text = raw.strip()
        if not text.isdigit() or int(text) not in allowed:
            raise _fail(name, raw, "it must be one of " + ", ".join(str(a) for a in allowed))
        return int(text)
    return default


def _interfaces() -> set[str]:
    try:
        return {name for _, name in socket.if_nameindex()}
    except OSError:
        return set()


def read_environment() -> HcclEnvironment:
    """Read and check every HCCL variable; raise ValueError naming the first bad one."""
    connect = _integer(
        "HCCL_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT_S, 1, _MAX_TIMEOUT_S,
        "it must be a whole number of seconds from 1 to 2147483647 (default 120)",
    )
    exec_set = bool(os.environ.get("HCCL_EXEC_TIMEOUT", "").strip())
    exec_timeout = _integer(
        "HCCL_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT_S, 0, _MAX_TIMEOUT_S,
        "it must be a whole number of seconds from 0 (never) to 2147483647 (default 1836)",
    )
    event_timeout = _integer(
        "HCCL_EVENT_TIMEOUT", DEFAULT_EVENT_TIMEOUT_S, 0, _MAX_TIMEOUT_S,
        "it must be a whole number of seconds from 0 (never) to 2147483647 (default 1868)",
    )
    if os.environ.get("HCCL_EVENT_TIMEOUT", "").strip() and event_timeout and exec_timeout:
        if event_timeout <= exec_timeout:
            raise ValueError(
                f"HCCL_EVENT_TIMEOUT ({event_timeout} s) must be greater than HCCL_EXEC_TIMEOUT "
                f"({exec_timeout} s): the event wait would give up before the collective does."
                + dist_error(ErrCode.VALUE)
            )
    buffsize = _integer(
        "HCCL_BUFFSIZE", DEFAULT_BUFFSIZE_MB, 1, 1 << 20, "it must be a whole number of MB, at least 1 (default 200)"
    )
    if_ip = os.environ.get("HCCL_IF_IP", "").strip() or None
    if if_ip is not None:
        try:
            ipaddress.ip_address(if_ip)
        except ValueError:
            raise _fail("HCCL_IF_IP", if_ip, "it must be an IPv4 or IPv6 address of this host") from None
    family = os.environ.get("HCCL_SOCKET_FAMILY", "").strip() or None
    if family is not None and family not in ("AF_INET", "AF_INET6"):
        raise _fail("HCCL_SOCKET_FAMILY", family, "it must be AF_INET or AF_INET6")
    ifname_raw = os.environ.get("HCCL_SOCKET_IFNAME", "").strip()
    ifnames: list[str] = []
    if ifname_raw:
        # HCCL accepts a list ("eth0,eth1") with an optional "=" (exact) or "^" (exclude) prefix.
        exclude = ifname_raw.startswith("^")
        names = [n.strip() for n in ifname_raw.lstrip("=^").split(",") if n.strip()]
        if not names:
            raise _fail("HCCL_SOCKET_IFNAME", ifname_raw, "it must name at least one network interface")
        present = _interfaces()
        if exclude:
            ifnames = sorted(present - set(names))
        else:
            ifnames = [n for n in names if not present or n in present]
            if not ifnames:
                raise _fail(
                    "HCCL_SOCKET_IFNAME", ifname_raw,
                    "none of these interfaces exists on this host (present: " + ", ".join(sorted(present)) + ")",
                )
    base_port = _integer(
        "HCCL_IF_BASE_PORT", DEFAULT_IF_BASE_PORT, 1024, 65520,
        "it must be a port from 1024 to 65520 (HCCL uses 16 ports from it; default 60000)",
    )
    async_handling = _flag(("TORCH_HCCL_ASYNC_ERROR_HANDLING", "HCCL_ASYNC_ERROR_HANDLING"), 1, (0, 1, 2, 3))
    blocking = _flag(("TORCH_HCCL_BLOCKING_WAIT", "HCCL_BLOCKING_WAIT"), 0, (0, 1)) == 1
    return HcclEnvironment(
        connect_timeout_s=connect,
        exec_timeout_s=exec_timeout,
        event_timeout_s=event_timeout,
        buffer_bytes=buffsize << 20,
        if_ip=if_ip,
        socket_ifname=ifnames,
        socket_family=family,
        if_base_port=base_port,
        async_error_handling=async_handling,
        blocking_wait=blocking,
        exec_timeout_set=exec_set,
    )


def note_tuning_variables(log) -> list[str]:
    """Log the hardware-tuning variables that are set (they change nothing on npusim)."""
    noted = []
    for name in TUNING_ONLY:
        value = os.environ.get(name)
        if value is not None:
            log(1, f"{name}={value} is accepted; it tunes real HCCL hardware and has no effect on npusim.")
            noted.append(name)
    return noted
