"""One process, both faces, for the aclnn operators: libopapi loaded next to npusim's PyTorch
backend runs an operator on npu tensors' memory (data_ptr(), strides and offsets as aclTensors)
on torch.npu.current_stream(); its result is the PyTorch operator's and its price on the
simulated timeline (device time and launches) is the PyTorch path's for the same computation."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import npusim
from npusim_tools.cann_home import cann_home

P = ctypes.c_void_p
ACL_TYPES = {torch.float32: 0, torch.float16: 1, torch.int32: 3, torch.int64: 9, torch.bool: 12, torch.bfloat16: 27}
ACL_FORMAT_ND = 2


def int64s(values) -> ctypes.Array:
    values = list(values)
    return (ctypes.c_int64 * max(len(values), 1))(*values)


class Aclnn:
    """libopapi through ctypes: aclTensors over npu tensors, the two phases on the current stream."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(str(Path(cann_home()) / "lib64" / "libopapi.so"))
        self.lib.aclCreateTensor.restype = P
        self.lib.aclCreateTensor.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_int64), ctypes.c_int64, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, P]
        self.lib.aclDestroyTensor.argtypes = [P]
        self.lib.aclCreateScalar.restype = P
        self.lib.aclCreateScalar.argtypes = [P, ctypes.c_int]
        self.lib.aclCreateIntArray.restype = P
        self.lib.aclCreateIntArray.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64]
        self.keep: list = []

    def tensor(self, t: torch.Tensor | None) -> P:
        """An aclTensor viewing `t` in its storage (base address, strides, offset)."""
        if t is None:
            return P()
        storage = t.untyped_storage()
        elements = storage.nbytes() // t.element_size()
        handle = self.lib.aclCreateTensor(int64s(t.shape), t.dim(), ACL_TYPES[t.dtype], int64s(t.stride()),
                                          t.storage_offset(), ACL_FORMAT_ND, int64s([elements]), 1,
                                          storage.data_ptr())
        assert handle
        return P(handle)

    def scalar(self, value: float) -> P:
        holder = ctypes.c_float(value)
        self.keep.append(holder)
        return P(self.lib.aclCreateScalar(ctypes.byref(holder), ACL_TYPES[torch.float32]))

    def int_array(self, values) -> P:
        return P(self.lib.aclCreateIntArray(int64s(values), len(values)))

    def run(self, name: str, *arguments) -> int:
        """Both phases of aclnn<name> on torch.npu.current_stream(); returns the workspace size."""
        size, executor = ctypes.c_uint64(), P()
        status = getattr(self.lib, f"aclnn{name}GetWorkspaceSize")(*arguments, ctypes.byref(size), ctypes.byref(executor))
        assert status == 0, (name, status)
        workspace = torch.empty(size.value, dtype=torch.uint8, device="npu") if size.value else None
        stream = P(torch.npu.current_stream().npu_stream)
        status = getattr(self.lib, f"aclnn{name}")(P(workspace.data_ptr() if workspace is not None else 0),
                                                    ctypes.c_uint64(size.value), executor, stream)
        assert status == 0, (name, status)
        return size.value


@pytest.fixture(scope="module")
def aclnn() -> Aclnn:
    return Aclnn()


def price(run) -> tuple[int, int]:
    """The device time and kernel launches `run` adds to the simulated timeline."""
    before = npusim._C._timing_totals()
    run()
    after = npusim._C._timing_totals()
    device = sum(after["device_ns_by_unit"].values()) - sum(before["device_ns_by_unit"].values())
    return device, after["launches"] - before["launches"]


def same_price(torch_run, aclnn_run) -> tuple[int, int]:
    """Both faces priced under the same conditions (the operands warm in the L2 either way)."""
    torch_run()
    expected = price(torch_run)
    assert expected[0] > 0 and expected[1] >= 1
    assert price(aclnn_run) == expected
    return expected


def npu(*shape, dtype=torch.float32, seed=0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(dtype).to("npu")


def test_add_matches_torch_in_values_and_price(aclnn: Aclnn):
    x, y = npu(64, 256, seed=1), npu(256, seed=2)
    out = torch.empty(64, 256, device="npu")
    run = lambda: aclnn.run("Add", aclnn.tensor(x), aclnn.tensor(y), aclnn.scalar(1.5), aclnn.tensor(out))
    same_price(lambda: torch.add(x, y, alpha=1.5), run)
    assert torch.equal(out.cpu(), torch.add(x, y, alpha=1.5).cpu())


def test_operator_on_a_strided_view_in_place(aclnn: Aclnn):
    base = npu(8, 16, seed=3)
    view = base.t()[2:6]  # strided, with an offset into the storage
    other = npu(4, 8, seed=4)
    expected = (view + 2 * other).cpu()
    aclnn.run("InplaceAdd", aclnn.tensor(view), aclnn.tensor(other), aclnn.scalar(2.0))
    assert torch.equal(view.cpu(), expected)
    assert torch.equal(base.t()[2:6].cpu(), expected)  # written through the view into base


@pytest.mark.parametrize("hf32", [False, True])
def test_mm_and_cube_math_type_match_torch_allow_hf32(aclnn: Aclnn, hf32: bool):
    a, b = npu(128, 96, seed=5), npu(96, 64, seed=6)
    out = torch.empty(128, 64, device="npu")
    previous = torch.npu.matmul.allow_hf32
    torch.npu.matmul.allow_hf32 = hf32
    try:
        # torch_npu passes ALLOW_FP32_DOWN_PRECISION exactly when allow_hf32 is on.
        run = lambda: aclnn.run("Mm", aclnn.tensor(a), aclnn.tensor(b), aclnn.tensor(out), ctypes.c_int8(int(hf32)))
        same_price(lambda: torch.mm(a, b), run)
        assert torch.equal(out.cpu(), torch.mm(a, b).cpu())
    finally:
        torch.npu.matmul.allow_hf32 = previous


def test_matmul_broadcast(aclnn: Aclnn):
    a, b = npu(4, 32, 48, seed=7), npu(48, 16, seed=8)
    out = torch.empty(4, 32, 16, device="npu")
    run = lambda: aclnn.run("Matmul", aclnn.tensor(a), aclnn.tensor(b), aclnn.tensor(out), ctypes.c_int8(0))
    same_price(lambda: torch.matmul(a, b), run)
    assert torch.equal(out.cpu(), torch.matmul(a, b).cpu())


def test_softmax_layer_norm_rms_norm(aclnn: Aclnn):
    x = npu(32, 128, seed=9, dtype=torch.float16)
    out = torch.empty_like(x)
    aclnn_softmax = lambda: aclnn.run("Softmax", aclnn.tensor(x), ctypes.c_int64(-1), aclnn.tensor(out))
    same_price(lambda: torch.softmax(x, -1), aclnn_softmax)
    assert torch.equal(out.cpu(), torch.softmax(x, -1).cpu())

    w, b = npu(128, seed=10, dtype=torch.float16), npu(128, seed=11, dtype=torch.float16)
    mean, rstd = torch.empty(32, 1, device="npu", dtype=torch.float16), torch.empty(32, 1, device="npu", dtype=torch.float16)
    shape = aclnn.int_array([128])
    aclnn_layer_norm = lambda: aclnn.run("LayerNorm", aclnn.tensor(x), shape, aclnn.tensor(w), aclnn.tensor(b),
                                         ctypes.c_double(1e-5), aclnn.tensor(out), aclnn.tensor(mean), aclnn.tensor(rstd))
    same_price(lambda: F.layer_norm(x, [128], w, b, 1e-5), aclnn_layer_norm)
    assert torch.equal(out.cpu(), F.layer_norm(x, [128], w, b, 1e-5).cpu())

    gamma = npu(128, seed=12, dtype=torch.float16)
    rms_rstd = torch.empty(32, 1, device="npu")
    aclnn_rms = lambda: aclnn.run("RmsNorm", aclnn.tensor(x), aclnn.tensor(gamma), ctypes.c_double(1e-6),
                                  aclnn.tensor(out), aclnn.tensor(rms_rstd))
    same_price(lambda: torch.ops.npu.npu_rms_norm(x, gamma, 1e-6), aclnn_rms)
    y, r = torch.ops.npu.npu_rms_norm(x, gamma, 1e-6)
    assert torch.equal(out.cpu(), y.cpu()) and torch.equal(rms_rstd.cpu(), r.cpu())


def test_activations_cast_and_reductions(aclnn: Aclnn):
    x = npu(64, 80, seed=13)
    out = torch.empty_like(x)
    for name, reference in (("Gelu", lambda: F.gelu(x, approximate="tanh")), ("Silu", lambda: F.silu(x))):
        same_price(reference, lambda: aclnn.run(name, aclnn.tensor(x), aclnn.tensor(out)))
        assert torch.equal(out.cpu(), reference().cpu()), name

    half = torch.empty(64, 80, device="npu", dtype=torch.float16)
    same_price(lambda: x.to(torch.float16), lambda: aclnn.run("Cast", aclnn.tensor(x), ACL_TYPES[torch.float16],
                                                              aclnn.tensor(half)))
    assert torch.equal(half.cpu(), x.to(torch.float16).cpu())

    dims = aclnn.int_array([1])
    total = torch.empty(64, 1, device="npu")
    same_price(lambda: x.sum(1, keepdim=True), lambda: aclnn.run("ReduceSum", aclnn.tensor(x), dims, True, 0,
                                                                 aclnn.tensor(total)))
    assert torch.equal(total.cpu(), x.sum(1, keepdim=True).cpu())
    mean = torch.empty(64, device="npu")
    same_price(lambda: x.mean(1), lambda: aclnn.run("Mean", aclnn.tensor(x), dims, False, 0, aclnn.tensor(mean)))
    assert torch.equal(mean.cpu(), x.mean(1).cpu())
    index = torch.empty(64, device="npu", dtype=torch.int64)
    same_price(lambda: x.argmax(1), lambda: aclnn.run("ArgMax", aclnn.tensor(x), ctypes.c_int64(1), False,
                                                      aclnn.tensor(index)))
    assert torch.equal(index.cpu(), x.argmax(1).cpu())


def test_embedding_and_rotary_embedding(aclnn: Aclnn):
    weight = npu(100, 32, seed=14)
    ids = torch.tensor([[3, 99, 0], [7, 7, 42]], device="npu")
    out = torch.empty(2, 3, 32, device="npu")
    same_price(lambda: F.embedding(ids, weight), lambda: aclnn.run("Embedding", aclnn.tensor(weight),
                                                                   aclnn.tensor(ids), aclnn.tensor(out)))
    assert torch.equal(out.cpu(), F.embedding(ids, weight).cpu())

    x = npu(2, 16, 4, 64, seed=15, dtype=torch.float16)
    cos, sin = npu(1, 16, 1, 64, seed=16, dtype=torch.float16), npu(1, 16, 1, 64, seed=17, dtype=torch.float16)
    rotated = torch.empty_like(x)
    same_price(lambda: torch.ops.npu.npu_rotary_mul(x, cos, sin),
               lambda: aclnn.run("RotaryPositionEmbedding", aclnn.tensor(x), aclnn.tensor(cos), aclnn.tensor(sin),
                                 ctypes.c_int64(0), aclnn.tensor(rotated)))
    assert torch.equal(rotated.cpu(), torch.ops.npu.npu_rotary_mul(x, cos, sin).cpu())


def test_flash_attention_score(aclnn: Aclnn):
    q, k, v = (npu(2, 4, 64, 32, seed=s, dtype=torch.float16) for s in (18, 19, 20))
    out = torch.empty_like(q)
    softmax_max, softmax_sum = (torch.empty(2, 4, 64, 8, device="npu") for _ in range(2))
    layout = ctypes.create_string_buffer(b"BNSD")
    scale = 32 ** -0.5
    torch_run = lambda: torch.ops.npu.npu_fusion_attention(q, k, v, 4, "BNSD", scale=scale, sparse_mode=0)
    aclnn_run = lambda: aclnn.run("FlashAttentionScore", aclnn.tensor(q), aclnn.tensor(k), aclnn.tensor(v), P(), P(),
                                  P(), P(), P(), ctypes.c_double(scale), ctypes.c_double(1.0), ctypes.c_int64(2147483647),
                                  ctypes.c_int64(2147483647), ctypes.c_int64(4), layout, ctypes.c_int64(0),
                                  ctypes.c_int64(0), aclnn.tensor(softmax_max), aclnn.tensor(softmax_sum), P(),
                                  aclnn.tensor(out))
    same_price(torch_run, aclnn_run)
    expected = torch_run()
    assert torch.equal(out.cpu(), expected[0].cpu())
    assert torch.equal(softmax_max.cpu(), expected[1].cpu()) and torch.equal(softmax_sum.cpu(), expected[2].cpu())


def test_operator_runs_on_the_current_torch_stream(aclnn: Aclnn):
    x = npu(1024, 1024, seed=21)
    out = torch.empty_like(x)
    side = torch.npu.Stream()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)

    def timed(run) -> float:
        torch.npu.synchronize()
        with torch.npu.stream(side):
            start.record()
            run()
            end.record()
        # The kernel is queued on the side stream, not on the default one.
        assert not side.query() and torch.npu.default_stream().query()
        end.synchronize()
        return start.elapsed_time(end)

    timed(lambda: F.silu(x))  # operands warm in the L2 for both
    aclnn_ms = timed(lambda: aclnn.run("Silu", aclnn.tensor(x), aclnn.tensor(out)))
    torch_ms = timed(lambda: F.silu(x))
    assert aclnn_ms > 0
    assert aclnn_ms == torch_ms


def host_time(run) -> int:
    """How far `run` moves the simulated host clock (its dispatch costs)."""
    before = npusim._C._timing_totals()["host_now_ns"]
    run()
    return npusim._C._timing_totals()["host_now_ns"] - before


def test_captured_model_replays_like_an_npugraph(aclnn: Aclnn):
    """aclmdlRICaptureBegin/End around aclnn operators on a torch stream, then aclmdlRIExecuteAsync:
    the same device time as an NPUGraph replay of the same operators, one host launch for all."""
    acl = ctypes.CDLL(str(Path(cann_home()) / "lib64" / "libascendcl.so"))
    acl.aclmdlRICaptureBegin.argtypes = [P, ctypes.c_int]
    acl.aclmdlRICaptureEnd.argtypes = [P, ctypes.POINTER(P)]
    acl.aclmdlRIExecuteAsync.argtypes = [P, P]
    acl.aclmdlRIDestroy.argtypes = [P]
    a, b = npu(256, 256, seed=22), npu(256, 256, seed=23)
    product, total = torch.zeros(256, 256, device="npu"), torch.zeros(256, 256, device="npu")
    side = torch.npu.Stream()
    with torch.npu.stream(side):
        stream = P(side.npu_stream)
        assert acl.aclmdlRICaptureBegin(stream, 0) == 0
        aclnn.run("Mm", aclnn.tensor(a), aclnn.tensor(b), aclnn.tensor(product), ctypes.c_int8(0))
        aclnn.run("Add", aclnn.tensor(product), aclnn.tensor(a), aclnn.scalar(1.0), aclnn.tensor(total))
        model = P()
        assert acl.aclmdlRICaptureEnd(stream, ctypes.byref(model)) == 0
        assert torch.count_nonzero(total.cpu()) == 0  # recorded, not run
        replay = lambda: acl.aclmdlRIExecuteAsync(model, stream)
        replay()
        side.synchronize()
        assert torch.equal(total.cpu(), (torch.mm(a, b) + a).cpu())
        model_device, _ = price(replay)
        model_host = host_time(replay)
        one_by_one_host = host_time(lambda: aclnn.run("Mm", aclnn.tensor(a), aclnn.tensor(b), aclnn.tensor(product),
                                                      ctypes.c_int8(0)))
    graph = torch.npu.NPUGraph()
    static_product, static_total = torch.empty_like(product), torch.empty_like(total)
    with torch.npu.graph(graph):
        torch.mm(a, b, out=static_product)
        torch.add(static_product, a, out=static_total)
    graph.replay()
    graph_device, _ = price(graph.replay)
    assert model_device == graph_device > 0
    # Two kernels, one launch from the host: what one kernel's dispatch costs, as a graph replay.
    assert model_host == host_time(graph.replay) == one_by_one_host
    assert acl.aclmdlRIDestroy(model) == 0
