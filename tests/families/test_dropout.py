"""Dropout on npu as torch_npu runs it (backend/families/DropoutOps.cpp): the CPU's numbers from the npu
generator, and on the timeline the kernels op-plugin's _npu_dropout launches: DSAGenBitMask (a bit mask,
ceil(n / 128) * 16 bytes) on the secondary stream, then one DropOutDoMask pass on the current stream after
it; the backward is one DropOutDoMask."""

import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import npusim

SECONDARY_STREAM = 32  # torch_npu's stream id of the secondary stream (type 1 << 5, index 0)


def _kernels(tmp_path, fn):
    """The device kernels `fn` launches: (name, stream, simulated start us, duration us, bytes, op)."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        fn()
        torch.npu.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    kernels.sort(key=lambda e: e["args"]["correlation"])
    return [(e["name"], e["args"]["stream"], e["args"]["simulated start us"], e["args"]["simulated duration us"],
             e["args"]["bytes"]) for e in kernels]


def _bit_mask_bytes(n):
    return (n + 127) // 128 * 128 // 8


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_numbers_are_the_cpus_from_the_npu_generator(dtype):
    x = torch.randn(4, 33, 17).to(dtype)
    torch.manual_seed(7)
    expected, expected_mask = torch.native_dropout(x, 0.3, True)
    torch.npu.manual_seed(7)
    out, mask = torch.native_dropout(x.npu(), 0.3, True)
    assert mask.dtype == torch.bool and mask.shape == x.shape  # PyTorch's mask, whatever is priced
    assert torch.equal(mask.cpu(), expected_mask.bool())
    assert torch.equal(out.cpu(), expected)
    grad = torch.randn_like(x)
    assert torch.equal(torch.ops.aten.native_dropout_backward(grad.npu(), mask, 1 / 0.7).cpu(),
                       torch.ops.aten.native_dropout_backward(grad, expected_mask.bool(), 1 / 0.7))


def test_seeded_runs_repeat_and_advance():
    x = torch.ones(1000, device="npu")
    torch.npu.manual_seed(1)
    a = torch.nn.functional.dropout(x, 0.5)
    b = torch.nn.functional.dropout(x, 0.5)
    torch.npu.manual_seed(1)
    assert torch.equal(torch.nn.functional.dropout(x, 0.5).cpu(), a.cpu())
    assert not torch.equal(a.cpu(), b.cpu())


def test_forward_is_mask_generation_on_the_secondary_stream_then_one_apply_pass(tmp_path):
    n = 96 * 12 * 64 * 64
    x = torch.randn(96, 12, 64, 64, device="npu")
    w = torch.randn(2048, 2048, device="npu")
    # Work queued on the current stream first: the mask generation does not wait for it.
    kernels = _kernels(tmp_path, lambda: (w @ w, torch.nn.functional.dropout(x, 0.1, True)))
    names = [k[0] for k in kernels]
    assert names == ["mm", "DSAGenBitMask", "DropOutDoMask"]
    mm, gen, apply = kernels
    assert gen[1] == SECONDARY_STREAM and apply[1] == mm[1] == torch.npu.current_stream().stream_id
    assert gen[4] == _bit_mask_bytes(n)  # the bit mask only: nothing read, n / 8 bytes written
    assert gen[2] < mm[2] + mm[3]  # ran alongside the matrix product
    assert apply[2] >= max(gen[2] + gen[3], mm[2] + mm[3]) - 1e-3  # after the event and the stream's work
    # One pass: the input and the bit mask read (some from the L2), the output written; no bool mask.
    assert x.numel() * 4 <= apply[4] <= 2 * x.numel() * 4 + _bit_mask_bytes(n)


def test_backward_is_one_apply_pass(tmp_path):
    x = torch.randn(64, 1024, device="npu", requires_grad=True)
    y = torch.nn.functional.dropout(x, 0.2, True)
    g = torch.ones_like(y)
    kernels = _kernels(tmp_path, lambda: y.backward(g))
    assert [k[0] for k in kernels] == ["DropOutDoMask"]


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_edge_probabilities_generate_no_mask(tmp_path, p):
    x = torch.randn(256, 256, device="npu")
    kernels = _kernels(tmp_path, lambda: torch.native_dropout(x, p, True))
    assert len(kernels) == 2 and "DSAGenBitMask" not in [k[0] for k in kernels]
    assert all(k[1] != SECONDARY_STREAM for k in kernels)
    out, mask = torch.native_dropout(x, p, True)
    assert torch.equal(out.cpu(), x.cpu() if p == 0 else torch.zeros(256, 256))
    assert bool(mask.all()) is (p == 0)


def test_operator_table_counts_the_aten_operators_only():
    x = torch.randn(32, 32, device="npu", requires_grad=True)
    npusim.reset_placement_report()
    torch.nn.functional.dropout(x, 0.5, True).sum().backward()
    counts = npusim.placement_report()["operators"]
    assert "aten::native_dropout" in counts and "aten::native_dropout_backward" in counts
    assert "aten::bernoulli_.float" not in counts and "aten::mul.Tensor" not in counts


def test_estimate_only_charges_the_same_kernels(tmp_path):
    def run():
        with npusim.estimate():
            x = torch.empty(8, 1 << 20, dtype=torch.float16, device="npu", requires_grad=True)
            torch.nn.functional.dropout(x, 0.1, True).backward(torch.empty(8, 1 << 20, dtype=torch.float16, device="npu"))
    kernels = _kernels(tmp_path, run)
    names = [k[0] for k in kernels]
    assert names.count("DSAGenBitMask") == 1 and names.count("DropOutDoMask") == 2
    assert next(k for k in kernels if k[0] == "DSAGenBitMask")[4] == _bit_mask_bytes(8 << 20)


def test_graph_replay_joins_the_secondary_stream_once(tmp_path):
    # torch_npu records the original stream's event and blocks the secondary stream on it once per
    # capture: in a replay the first mask generation waits for the work before it, later ones do not.
    w = torch.randn(2048, 2048, device="npu")
    x = torch.randn(64, 4096, device="npu")
    graph = torch.npu.NPUGraph()
    with torch.npu.stream(torch.npu.Stream()):
        with torch.npu.graph(graph):
            w @ w
            torch.nn.functional.dropout(x, 0.1, True)
            torch.nn.functional.dropout(x, 0.1, True)
    torch.npu.synchronize()
    kernels = _kernels(tmp_path, graph.replay)
    gens = [k for k in kernels if k[0] == "DSAGenBitMask"]
    applies = [k for k in kernels if k[0] == "DropOutDoMask"]
    others = [k for k in kernels if k[0] not in ("DSAGenBitMask", "DropOutDoMask")]
    assert len(gens) == len(applies) == 2 and all(k[1] == SECONDARY_STREAM for k in gens)
    work_end = max(k[2] + k[3] for k in others)
    assert gens[0][2] >= work_end - 1e-3
    assert gens[1][2] < applies[0][2] + applies[0][3]  # ran beside the first apply pass
    assert applies[1][2] >= gens[1][2] + gens[1][3] - 1e-3
