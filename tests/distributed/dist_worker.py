"""One rank of a test job (see dist_harness.run_job). Prints one line "RESULT <json>"."""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist

import npusim  # noqa: F401  (registers npu and hccl when autoload is off)

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])


def emit(result) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def same(npu: torch.Tensor, cpu: torch.Tensor) -> bool:
    return npu.device.type == "npu" and torch.equal(npu.cpu(), cpu)


def data(shape, dtype, salt=0):
    base = torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape)
    values = (base + 3 * RANK + salt) % 7 + 1
    return values.to(dtype)


def both(shape, dtype, salt=0):
    cpu = data(shape, dtype, salt)
    return cpu.clone().to("npu"), cpu


def error_text(fn) -> str:
    try:
        fn()
    except Exception as error:  # noqa: BLE001
        return f"{type(error).__name__}: {error}"
    return "no error"


def scenario_ops():
    torch.npu.set_device(0)
    dist.init_process_group("cpu:gloo,npu:hccl")
    failures, checks = [], 0

    def check(name, ok):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(name)

    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8]
    if os.environ.get("OPS_DTYPES") == "short":
        dtypes = [torch.float32, torch.bfloat16, torch.int64]
    for dtype in dtypes:
        ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN]
        if dtype != torch.int8:
            ops.append(dist.ReduceOp.PRODUCT)
        for op in ops:
            npu, cpu = both((5, 3), dtype)
            dist.all_reduce(npu, op=op)
            dist.all_reduce(cpu, op=op)
            check(f"all_reduce {op} {dtype}", same(npu, cpu))
        npu, cpu = both((6,), dtype)
        dist.broadcast(npu, src=WORLD - 1)
        dist.broadcast(cpu, src=WORLD - 1)
        check(f"broadcast {dtype}", same(npu, cpu))
        npu, cpu = both((4,), dtype)
        dist.reduce(npu, dst=0)
        dist.reduce(cpu, dst=0)
        check(f"reduce {dtype}", same(npu, cpu))
        npu, cpu = both((3, 2), dtype)
        out_n = [torch.empty_like(npu) for _ in range(WORLD)]
        out_c = [torch.empty_like(cpu) for _ in range(WORLD)]
        dist.all_gather(out_n, npu)
        dist.all_gather(out_c, cpu)
        check(f"all_gather {dtype}", all(same(a, b) for a, b in zip(out_n, out_c)))
        big_n = torch.empty((WORLD * 3, 2), dtype=dtype, device="npu")
        big_c = torch.empty((WORLD * 3, 2), dtype=dtype)
        dist.all_gather_into_tensor(big_n, npu)
        dist.all_gather_into_tensor(big_c, cpu)
        check(f"all_gather_into_tensor {dtype}", same(big_n, big_c))
        ins = [data((4,), dtype, salt=i) for i in range(WORLD)]
        out_n = torch.empty(4, dtype=dtype, device="npu")
        out_c = torch.empty(4, dtype=dtype)
        dist.reduce_scatter(out_n, [t.to("npu") for t in ins])
        dist.reduce_scatter(out_c, ins)
        check(f"reduce_scatter {dtype}", same(out_n, out_c))
        flat = data((WORLD * 4,), dtype)
        out_n = torch.empty(4, dtype=dtype, device="npu")
        out_c = torch.empty(4, dtype=dtype)
        dist.reduce_scatter_tensor(out_n, flat.to("npu"))
        dist.reduce_scatter_tensor(out_c, flat)
        check(f"reduce_scatter_tensor {dtype}", same(out_n, out_c))
        ins = [data((2,), dtype, salt=i) for i in range(WORLD)]
        out_n = [torch.empty(2, dtype=dtype, device="npu") for _ in range(WORLD)]
        out_c = [torch.empty(2, dtype=dtype) for _ in range(WORLD)]
        dist.all_to_all(out_n, [t.to("npu") for t in ins])
        dist.all_to_all(out_c, ins)
        check(f"all_to_all {dtype}", all(same(a, b) for a, b in zip(out_n, out_c)))
        flat = data((WORLD * 2,), dtype)
        out_n = torch.empty(WORLD * 2, dtype=dtype, device="npu")
        out_c = torch.empty(WORLD * 2, dtype=dtype)
        dist.all_to_all_single(out_n, flat.to("npu"))
        dist.all_to_all_single(out_c, flat)
        check(f"all_to_all_single {dtype}", same(out_n, out_c))

    # AVG: Gloo has none; torch_npu sums then divides.
    npu, cpu = both((8,), torch.float32)
    dist.all_reduce(npu, op=dist.ReduceOp.AVG)
    dist.all_reduce(cpu)
    check("all_reduce AVG", torch.allclose(npu.cpu(), cpu / WORLD))
    # Uneven all_to_all_single and uneven all_gather (all-gather-v).
    in_splits = [RANK + 1 + peer for peer in range(WORLD)]
    out_splits = [peer + 1 + RANK for peer in range(WORLD)]
    flat = data((sum(in_splits),), torch.float32)
    out_n = torch.empty(sum(out_splits), device="npu")
    out_c = torch.empty(sum(out_splits))
    dist.all_to_all_single(out_n, flat.to("npu"), out_splits, in_splits)
    dist.all_to_all_single(out_c, flat, out_splits, in_splits)
    check("all_to_all_single uneven", same(out_n, out_c))
    mine = data((RANK + 2,), torch.float32)
    out_n = [torch.empty(r + 2, device="npu") for r in range(WORLD)]
    dist.all_gather(out_n, mine.to("npu"))
    check("all_gather uneven", all(torch.equal(o.cpu(), (torch.arange(r + 2.0) + 3 * r) % 7 + 1)
                                   for r, o in enumerate(out_n)))
    # Coalesced: allreduce_coalesced, allgather_into_tensor_coalesced, reduce_scatter_tensor_coalesced.
    from torch.distributed.distributed_c10d import _coalescing_manager

    pairs = [both((3,), torch.float32, salt=s) for s in range(3)]
    with _coalescing_manager(device=torch.device("npu", 0)):
        for npu, _ in pairs:
            dist.all_reduce(npu)
    for _, cpu in pairs:
        dist.all_reduce(cpu)
    check("coalesced all_reduce", all(same(n, c) for n, c in pairs))
    ins = [data((2,), torch.float32, salt=s) for s in range(2)]
    outs_n = [torch.empty(2 * WORLD, device="npu") for _ in ins]
    with _coalescing_manager(device=torch.device("npu", 0)):
        for o, i in zip(outs_n, ins):
            dist.all_gather_into_tensor(o, i.to("npu"))
    for o, i in zip(outs_n, ins):
        ref = torch.empty(2 * WORLD)
        dist.all_gather_into_tensor(ref, i)
        check("coalesced all_gather_into_tensor", same(o, ref))
    ins = [data((2 * WORLD,), torch.float32, salt=s) for s in range(2)]
    outs_n = [torch.empty(2, device="npu") for _ in ins]
    with _coalescing_manager(device=torch.device("npu", 0)):
        for o, i in zip(outs_n, ins):
            dist.reduce_scatter_tensor(o, i.to("npu"))
    for o, i in zip(outs_n, ins):
        ref = torch.empty(2)
        dist.reduce_scatter_tensor(ref, i)
        check("coalesced reduce_scatter_tensor", same(o, ref))
    # Point to point: send/recv, recv from any source, batch_isend_irecv.
    peer = (RANK + 1) % WORLD
    prev = (RANK - 1) % WORLD
    if RANK == 0:
        dist.send(torch.full((3,), 7.0, device="npu"), dst=1)
    elif RANK == 1:
        got = torch.empty(3, device="npu")
        dist.recv(got, src=0)
        check("send/recv", torch.equal(got.cpu(), torch.full((3,), 7.0)))
    if RANK == 1:
        dist.send(torch.full((2,), 5.0, device="npu"), dst=0, tag=7)
    elif RANK == 0:
        got = torch.empty(2, device="npu")
        sender = dist.recv(got, tag=7)  # its own tag: other ranks' batch sends must not match
        check("recv any source", sender == 1 and torch.equal(got.cpu(), torch.full((2,), 5.0)))
    out = torch.empty(4, device="npu")
    ops = [dist.P2POp(dist.isend, torch.full((4,), float(RANK), device="npu"), peer),
           dist.P2POp(dist.irecv, out, prev)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    check("batch_isend_irecv", torch.equal(out.cpu(), torch.full((4,), float(prev))))
    dist.barrier()
    # gather / scatter, with torch_npu's warnings.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npu, cpu = both((3,), torch.float32)
        g_n = [torch.empty(3, device="npu") for _ in range(WORLD)] if RANK == 0 else None
        g_c = [torch.empty(3) for _ in range(WORLD)] if RANK == 0 else None
        dist.gather(npu, g_n, dst=0)
        dist.gather(cpu, g_c, dst=0)
        if RANK == 0:
            check("gather", all(same(a, b) for a, b in zip(g_n, g_c)))
        s_n = torch.empty(3, device="npu")
        s_c = torch.empty(3)
        chunks = [data((3,), torch.float32, salt=i) for i in range(WORLD)]
        dist.scatter(s_n, [c.to("npu") for c in chunks] if RANK == 0 else None, src=0)
        dist.scatter(s_c, chunks if RANK == 0 else None, src=0)
        check("scatter", same(s_n, s_c))
    texts = [str(w.message) for w in caught]
    check("gather warning", any("HCCL doesn't support gather at the moment. Implemented with allgather instead."
                                in t for t in texts))
    check("scatter warning", any("HCCL doesn't support scatter at the moment" in t for t in texts))
    # Work semantics: async op, is_completed, result, future value on npu.
    npu, cpu = both((4,), torch.float32)
    work = dist.all_reduce(npu, async_op=True)
    future = work.get_future()
    work.wait()
    dist.all_reduce(cpu)
    value = future.wait()
    check("work future", work.is_completed() and value[0].device.type == "npu" and same(value[0], cpu))
    # Errors, as torch_npu words them.
    hccl_only = dist.new_group(backend="hccl")
    errors = {
        "band": error_text(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32, device="npu"),
                                                   op=dist.ReduceOp.BAND)),
        "double": error_text(lambda: dist.all_reduce(torch.ones(2, dtype=torch.float64, device="npu"))),
        "size": error_text(lambda: dist.all_gather_into_tensor(torch.empty(3, device="npu"),
                                                               torch.ones(2, device="npu"))),
        "cpu_to_hccl": error_text(lambda: dist.all_reduce(torch.ones(2), group=hccl_only)),
        "noncontiguous": error_text(lambda: dist.all_reduce(torch.ones(4, 4, device="npu").t())),
    }
    # Broadcast of float64 is fine (only reductions restrict dtypes).
    npu, cpu = both((3,), torch.float64)
    dist.broadcast(npu, src=0)
    dist.broadcast(cpu, src=0)
    check("broadcast float64", same(npu, cpu))
    # Unsigned 16/32/64-bit tensors move (HCCL_DATA_TYPE_UINT16/32/64); reductions refuse them.
    for dtype in (torch.uint16, torch.uint32, torch.uint64):
        mine = (torch.arange(4, dtype=torch.float16) * (RANK + 1)).to("npu").to(dtype)
        gathered = [torch.empty_like(mine) for _ in range(WORLD)]
        dist.all_gather(gathered, mine)
        check(f"all_gather {dtype}", all(
            torch.equal(g.to(torch.float32).cpu(), torch.arange(4.0) * (r + 1)) for r, g in enumerate(gathered)))
        dist.broadcast(mine, src=0)
        check(f"broadcast {dtype}", torch.equal(mine.to(torch.float32).cpu(), torch.arange(4.0)))
    errors["uint32"] = error_text(lambda: dist.all_reduce(torch.ones(2, device="npu").to(torch.uint32)))
    from npusim.distributed import communication_report

    report = communication_report()
    # abort(): the communicator is unusable afterwards, with a clear error.
    backend = hccl_only._get_backend(torch.device("npu", 0))
    backend.abort()
    errors["aborted"] = error_text(lambda: dist.all_reduce(torch.ones(2, device="npu"), group=hccl_only))
    dist.destroy_process_group()
    emit({"checks": checks, "failures": failures, "errors": errors,
          "comm_calls": report["calls"], "operations": sorted(op["name"] for op in report["operations"])})


def timeline_check():
    """Work.wait() makes the current stream wait for the HCCL stream; compute overlaps until then."""
    big = torch.ones(16 << 20, device="npu")  # 64 MiB: ~1 ms of modelled all-reduce on 910B
    torch.npu.synchronize()
    stream = torch.npu.current_stream()
    start = torch.npu.Event(enable_timing=True)
    after_issue = torch.npu.Event(enable_timing=True)
    after_wait = torch.npu.Event(enable_timing=True)
    start.record()
    work = dist.all_reduce(big, async_op=True)
    after_issue.record()
    work.wait()
    after_wait.record()
    torch.npu.synchronize()
    issue_ms = start.elapsed_time(after_issue)
    wait_ms = start.elapsed_time(after_wait)
    return {"issue_ms": issue_ms, "wait_ms": wait_ms, "value": float(big[0].item()),
            "stream": int(stream.stream_id)}


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _batches():
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(4 * WORLD, 8, generator=generator), torch.randn(4 * WORLD, 4, generator=generator))
            for _ in range(3)]


def _reference():
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in _batches():
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return [p.detach() for p in model.parameters()]


def scenario_ddp():
    torch.npu.set_device(0)
    dist.init_process_group("hccl", device_id=torch.device("npu", 0))
    timeline = timeline_check()
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(_model().to("npu"), bucket_cap_mb=0.0001)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in _batches():
        part = slice(4 * RANK, 4 * (RANK + 1))
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x[part].to("npu")), y[part].to("npu")).backward()
        optimizer.step()
    reference = _reference()
    differences = [float((p.detach().cpu() - r).abs().max()) for p, r in zip(model.parameters(), reference)]
    from npusim.distributed import communication_report

    report = communication_report()
    emit({"max_difference": max(differences), "timeline": timeline, "allreduce_calls": next(
        (op["calls"] for op in report["operations"] if op["name"] == "allreduce"), 0)})
    dist.destroy_process_group()


def scenario_fsdp():
    device = os.environ.get("DIST_DEVICE", "npu")
    if device == "npu":
        torch.npu.set_device(0)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    if device == "cpu":  # the reference run of the same code over Gloo
        dist.init_process_group("gloo")
    mesh = init_device_mesh(device, (WORLD,))
    model = _model().to(device)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in _batches():
        part = slice(4 * RANK, 4 * (RANK + 1))
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[part].to(device)), y[part].to(device))
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    full = [p.full_tensor().detach().cpu() for p in model.parameters()]
    reference = _reference()
    differences = [float((p - r).abs().max()) for p, r in zip(full, reference)]
    emit({"max_difference": max(differences), "losses": losses, "backend": str(dist.get_backend_config())})
    dist.destroy_process_group()


def scenario_dead_rank():
    """Rank 1 dies before the collective; rank 0 must fail with an HCCL error, never hang."""
    torch.npu.set_device(0)
    dist.init_process_group("hccl")
    x = torch.ones(1024, device="npu")
    dist.all_reduce(x)  # both ranks connected
    if RANK == 1:
        os._exit(3)
    start = time.monotonic()
    text = error_text(lambda: dist.all_reduce(torch.ones(1 << 20, device="npu")))
    emit({"error": text, "seconds": time.monotonic() - start})
    os._exit(0)


def scenario_hung_rank():
    """Rank 1 stays alive but never joins; rank 0 gives up after HCCL_EXEC_TIMEOUT."""
    torch.npu.set_device(0)
    dist.init_process_group("hccl")
    dist.all_reduce(torch.ones(4, device="npu"))
    if RANK == 1:
        time.sleep(int(os.environ["HCCL_EXEC_TIMEOUT"]) + 2)
        os._exit(0)
    start = time.monotonic()
    text = error_text(lambda: dist.all_reduce(torch.ones(4, device="npu")))
    emit({"error": text, "seconds": time.monotonic() - start})
    os._exit(0)


def scenario_init_error():
    """init_process_group only: the error text of a bad environment or an unreachable master."""
    torch.npu.set_device(0)
    start = time.monotonic()
    text = error_text(lambda: dist.init_process_group("hccl"))
    emit({"error": text, "seconds": time.monotonic() - start})
    os._exit(0)


def scenario_servers():
    """A two-server job: each rank reports its gloo address and the modelled algorithm."""
    torch.npu.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.npu.device_count())
    dist.init_process_group("hccl")
    x = torch.full((256,), float(RANK + 1), device="npu")
    dist.all_reduce(x)
    from npusim.distributed import communication_report

    model = torch.nn.Linear(4, 2).to("npu")
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp(torch.ones(3, 4, device="npu")).sum().backward()
    grads = [float(p.grad.sum().item()) for p in ddp.parameters()]
    ops = {op["name"]: op["algorithm"] for op in communication_report()["operations"]}
    emit({"sum": float(x[0].item()), "algorithm": ops.get("allreduce"), "grads": grads})
    dist.destroy_process_group()


if __name__ == "__main__":
    import faulthandler

    # A hung rank prints where it hangs and exits, so a test reports the place instead of a timeout.
    faulthandler.dump_traceback_later(float(os.environ.get("NPUSIM_TEST_RANK_TIMEOUT", "50")), exit=True)
    globals()["scenario_" + sys.argv[1]]()
