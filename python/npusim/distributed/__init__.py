"""Distributed training on the simulated NPU: the ``hccl`` backend of torch.distributed.

``init_process_group("hccl")`` (or ``device_id=torch.device("npu", i)``,
``"cpu:gloo,npu:hccl"``, ``init_device_mesh("npu", ...)``) creates
:class:`ProcessGroupHCCL`, a C++ ``c10d::Backend`` (``csrc/distributed``) that runs every
collective through PyTorch's own Gloo process group on zero-copy CPU aliases of the npu buffers
and charges the modelled HCCL time to an HCCL stream of the simulated timeline. Gloo's TCP
transport connects the ranks, so jobs span processes and hosts exactly as with torchrun on real
NPUs. Inside :func:`npusim.estimate` the data mover is PyTorch's FakeProcessGroup instead: W
ranks are priced from one process and no data moves.

The HCCL environment variables are validated when a group is created (:mod:`._environment`);
``RANK_TABLE_FILE`` bootstraps the world size, the servers and the master address
(:mod:`._rank_table`).
"""

from __future__ import annotations

import datetime
import functools
import os
import warnings

import torch
import torch.distributed as dist

from npusim._error_code import ErrCode, dist_error

__all__ = [
    "is_hccl_available",
    "ProcessGroupHCCL",
    "communication_report",
    "reset_communication_report",
    "price_collective",
    "exposed_communication",
]

_REGISTERED = False


def is_hccl_available() -> bool:
    """True: the hccl backend is available (torch_npu answers the same on an NPU host)."""
    return True


def _extension():
    from npusim import _distributed_C

    return _distributed_C


def __getattr__(name: str):
    if name == "ProcessGroupHCCL":
        return _extension().ProcessGroupHCCL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _device_count() -> int:
    import npusim.npu

    return int(npusim.npu.device_count())


def _is_910a() -> bool:
    from npusim import _C

    return str(_C._chip_info()["soc_name"]).startswith("Ascend910A")


def _rank_table_from_environment():
    path = os.environ.get("RANK_TABLE_FILE", "").strip()
    if not path:
        return None
    from npusim.distributed._rank_table import load_rank_table

    return load_rank_table(path, _device_count())


def _ranks_per_server(world_size: int, global_ranks: list[int] | None) -> int:
    """How many ranks of this group share one server (the collective model's topology)."""
    table = _rank_table_from_environment()
    if table is not None:
        server_of = table.server_of_rank
        members = global_ranks if global_ranks else list(range(world_size))
        counts: dict[int, int] = {}
        for rank in members:
            server = server_of.get(rank, rank // max(1, table.ranks_per_server))
            counts[server] = counts.get(server, 0) + 1
        return max(counts.values()) if counts else 1
    local = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
    per_server = int(local) if local.isdigit() and int(local) > 0 else _device_count()
    if global_ranks:
        counts = {}
        for rank in global_ranks:
            counts[rank // per_server] = counts.get(rank // per_server, 0) + 1
        return max(counts.values())
    return max(1, min(per_server, world_size))


def _gloo_devices(environment):
    from torch.distributed import ProcessGroupGloo

    if environment.if_ip:
        return [ProcessGroupGloo.create_device(hostname=environment.if_ip)]
    if environment.socket_ifname:
        return [ProcessGroupGloo.create_device(interface=name) for name in environment.socket_ifname]
    gloo_ifname = os.environ.get("GLOO_SOCKET_IFNAME", "").strip()
    if gloo_ifname:
        return [ProcessGroupGloo.create_device(interface=name) for name in gloo_ifname.split(",") if name]
    return [ProcessGroupGloo.create_default_device()]


def _is_fake_store(store) -> bool:
    seen = store
    for _ in range(8):  # PrefixStores wrap the user's store
        if type(seen).__name__ == "FakeStore":
            return True
        underlying = getattr(seen, "underlying_store", None)
        if underlying is None or underlying is seen:
            return False
        seen = underlying
    return False


_RELEASE_AT_EXIT = False


def _release_deferred_at_exit() -> None:
    # Tensors and futures whose last reference a Gloo thread handed over (csrc/distributed/
    # DeferredRelease.h) are released here, while the interpreter can still take them.
    try:
        _extension()._release_deferred()
    except Exception:  # noqa: BLE001 - this only prevents an abort; it must not cause one
        pass


def _create_hccl_backend(backend_options, process_group_options):
    """The creator registered for ``hccl`` (``extended_api=True``)."""
    global _RELEASE_AT_EXIT
    from npusim import _C
    from npusim.distributed._environment import note_tuning_variables, read_environment

    extension = _extension()
    if not _RELEASE_AT_EXIT:
        import atexit

        atexit.register(_release_deferred_at_exit)
        _RELEASE_AT_EXIT = True
    environment = read_environment()
    note_tuning_variables(extension._plog)
    store = backend_options.store
    rank = int(backend_options.group_rank)
    size = int(backend_options.group_size)
    global_ranks = list(backend_options.global_ranks_in_group or [])
    timeout = backend_options.timeout
    if environment.exec_timeout_set:
        exec_timeout = (
            datetime.timedelta(seconds=environment.exec_timeout_s)
            if environment.exec_timeout_s
            else datetime.timedelta(days=365 * 20)  # 0: never
        )
    else:
        exec_timeout = timeout
    table = _rank_table_from_environment()
    if table is not None and not global_ranks and table.world_size != size:
        raise ValueError(
            f"RANK_TABLE_FILE {table.path} lists {table.world_size} ranks, but the process group has "
            f"{size} (WORLD_SIZE)." + dist_error(ErrCode.VALUE)
        )
    if _C._estimate_only() or _is_fake_store(store):
        # Estimate-only (npusim.estimate, a mode of the runtime): collectives are priced and
        # checked, no data moves.
        from torch._C._distributed_c10d import FakeProcessGroup

        mover = FakeProcessGroup._create_internal(rank, size)
    else:
        from torch.distributed import ProcessGroupGloo

        gloo_options = ProcessGroupGloo._Options()
        # Gloo's default timeout bounds the operations that take none (send/recv): HCCL_EXEC_TIMEOUT.
        gloo_options._timeout = exec_timeout
        gloo_options._devices = _gloo_devices(environment)
        # Its own key space: in "cpu:gloo,npu:hccl" the CPU Gloo backend rendezvouses on the same store.
        hccl_store = dist.PrefixStore("hccl/", store)
        try:
            mover = ProcessGroupGloo(hccl_store, rank, size, gloo_options)
        except RuntimeError as error:
            raise RuntimeError(
                f"HCCL function error: HcclCommInitRootInfo(numRanks={size}, rank={rank}) failed: the ranks "
                f"could not connect ({error})"
                + dist_error(ErrCode.HCCL)
            ) from error
        if hasattr(mover, "options"):
            mover.options.global_ranks_in_group = global_ranks
            mover.options.group_name = backend_options.group_id
    return extension.ProcessGroupHCCL(
        mover,
        rank,
        size,
        exec_timeout=exec_timeout,
        blocking_wait=environment.blocking_wait,
        ranks_per_server=_ranks_per_server(size, global_ranks),
        server_910a=_is_910a(),
        buffer_bytes=environment.buffer_bytes,
    )


def _uses_hccl(backend, device_id) -> bool:
    if backend is None:
        return device_id is not None and torch.device(device_id).type == "npu" or bool(
            os.environ.get("RANK_TABLE_FILE")
        )
    return "hccl" in str(backend).lower()


def _bootstrap_from_rank_table() -> None:
    table = _rank_table_from_environment()
    if table is None:
        return
    os.environ.setdefault("MASTER_ADDR", table.servers[0])
    os.environ.setdefault("WORLD_SIZE", str(table.world_size))
    if int(os.environ["WORLD_SIZE"]) != table.world_size:
        raise ValueError(
            f"RANK_TABLE_FILE {table.path} lists {table.world_size} ranks, but WORLD_SIZE is "
            f"{os.environ['WORLD_SIZE']}." + dist_error(ErrCode.VALUE)
        )


def _is_rendezvous_failure(error: BaseException) -> bool:
    if isinstance(error, (dist.DistNetworkError, dist.DistStoreError, TimeoutError, ConnectionError)):
        return True
    text = str(error)
    return any(word in text for word in ("timed out", "Timed out", "Connection refused", "connect()", "Socket Timeout"))


def _wrap_init_process_group(original):
    @functools.wraps(original)
    def init_process_group(backend=None, init_method=None, timeout=None, *args, **kwargs):
        if not _uses_hccl(backend, kwargs.get("device_id")):
            return original(backend, init_method, timeout, *args, **kwargs)
        from npusim.distributed._environment import read_environment

        environment = read_environment()  # a bad variable fails here, before any connection
        if init_method is None and kwargs.get("store") is None:
            _bootstrap_from_rank_table()
        if timeout is None and os.environ.get("HCCL_CONNECT_TIMEOUT", "").strip():
            timeout = datetime.timedelta(seconds=environment.connect_timeout_s)
        try:
            return original(backend, init_method, timeout, *args, **kwargs)
        except Exception as error:
            if not _is_rendezvous_failure(error) or "HCCL function error" in str(error):
                raise
            master = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
            seconds = timeout.total_seconds() if timeout is not None else None
            within = f" within {seconds:g} s" if seconds is not None else ""
            raise RuntimeError(
                f"init_process_group(backend='{backend or 'hccl'}') could not reach the rendezvous master "
                f"{master}{within}: {error}. Check MASTER_ADDR and MASTER_PORT (or the first server of "
                "RANK_TABLE_FILE), that rank 0 runs, and HCCL_CONNECT_TIMEOUT." + dist_error(ErrCode.TIMEOUT)
            ) from error

    init_process_group._npusim_wrapped = True
    return init_process_group


_GATHER_WARNING = "HCCL doesn't support gather at the moment. Implemented with allgather instead."
_SCATTER_WARNING = "HCCL doesn't support scatter at the moment. Implemented with broadcast instead."


def _wrap_with_warning(original, text: str, tensor_argument: str):
    """torch_npu's Python warning for gather/scatter of npu tensors (its distributed_c10d.py)."""

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        tensor = args[0] if args else kwargs.get(tensor_argument)
        if isinstance(tensor, torch.Tensor) and tensor.device.type == "npu":
            warnings.warn(text, stacklevel=2)
        return original(*args, **kwargs)

    wrapper._npusim_wrapped = True
    return wrapper


def register() -> None:
    """Register ``hccl`` with torch.distributed (once per process; cheap, loads no extension)."""
    global _REGISTERED
    if _REGISTERED or not dist.is_available():
        return
    if "hccl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("hccl", _create_hccl_backend, extended_api=True, devices=["npu"])
    dist.is_hccl_available = is_hccl_available
    if not getattr(dist.init_process_group, "_npusim_wrapped", False):
        wrapped = _wrap_init_process_group(dist.distributed_c10d.init_process_group)
        dist.distributed_c10d.init_process_group = wrapped
        dist.init_process_group = wrapped
    if not getattr(dist.gather, "_npusim_wrapped", False):
        dist.gather = dist.distributed_c10d.gather = _wrap_with_warning(
            dist.distributed_c10d.gather, _GATHER_WARNING, "tensor")
        dist.scatter = dist.distributed_c10d.scatter = _wrap_with_warning(
            dist.distributed_c10d.scatter, _SCATTER_WARNING, "tensor")
    _REGISTERED = True


def communication_report() -> dict:
    """Modelled communication since the last reset: total time, the part that stalled compute
    streams in Work.wait, and per operation its calls, bytes, time, algorithm and bus bandwidth."""
    return dict(_extension()._communication_totals())


def reset_communication_report() -> None:
    _extension()._reset_communication_totals()


def price_collective(op: str, nbytes: int, world_size: int, ranks_per_server: int = 8, *, server_910a: bool = False,
                     buffer_bytes: int = 200 << 20, peer_same_server: bool = True) -> tuple[float, str, float]:
    """The modelled time (s), algorithm and bus bandwidth (bytes/s) of one collective."""
    ns, algorithm, busbw = _extension()._price_collective(
        op, int(nbytes), int(world_size), int(ranks_per_server), server_910a, int(buffer_bytes), peer_same_server
    )
    return ns / 1e9, algorithm, busbw


def exposed_communication(communication_s: float, compute_s: float) -> float:
    """The seconds a collective of `communication_s` adds when it runs alongside `compute_s` of compute on the
    same chip (fused MC2 kernels, an asynchronous collective behind a GEMM): overlap hides only part of the
    shorter of the two (the performance model's calibration, perf/Calibration.h)."""
    return float(_extension()._exposed_communication(float(communication_s), float(compute_s)))

