"""Quantized tensors on npu as torch_npu 2.13 has them.

op-plugin registers quantize_per_tensor and quantize_per_channel for PrivateUse1 and dequantize.self,
int_repr and _empty_affine_quantized for QuantizedPrivateUse1: the result of quantizing an npu tensor
is a real quantized npu tensor whose int_repr() and dequantize() work (values as on the CPU, bit for
bit), and every other operator on it fails with PyTorch's dispatcher error for that backend.
"""

from __future__ import annotations

import pytest
import torch

import npusim  # noqa: F401
from npusim import _C

from robustness_support import run_python

DTYPES = [(torch.qint8, 3), (torch.quint8, 128), (torch.qint32, -7)]
# PyTorch names the backend by the PrivateUse1 name, "npu", as with torch_npu.
UNSUPPORTED = "Quantizednpu"


def _values(shape=(5, 7), seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator) * 20
    x.view(-1)[0] = float("inf")
    x.view(-1)[1] = -float("inf")
    x.view(-1)[2] = 0.05  # a tie at scale 0.1: rounds to even as on the CPU
    return x


@pytest.mark.parametrize("dtype,zero_point", DTYPES)
def test_quantize_per_tensor_round_trip_matches_cpu(dtype, zero_point):
    x = _values()
    expected = torch.quantize_per_tensor(x, 0.1, zero_point, dtype)
    q = torch.quantize_per_tensor(x.to("npu"), 0.1, zero_point, dtype)
    assert q.is_quantized and q.device.type == "npu" and q.dtype == dtype and q.shape == x.shape
    representation = q.int_repr()
    assert representation.device.type == "npu" and not representation.is_quantized
    assert representation.dtype == expected.int_repr().dtype
    assert torch.equal(representation.cpu(), expected.int_repr())
    real = q.dequantize()
    assert real.device.type == "npu" and real.dtype == torch.float32
    assert torch.equal(real.cpu(), expected.dequantize())


@pytest.mark.parametrize("dtype,zero_point", DTYPES)
def test_quantize_per_channel_round_trip_matches_cpu(dtype, zero_point):
    x = _values((4, 6, 3), seed=1)
    scales = torch.linspace(0.02, 0.3, 6)
    zero_points = torch.arange(6) + zero_point
    expected = torch.quantize_per_channel(x, scales, zero_points, 1, dtype)
    q = torch.quantize_per_channel(x.to("npu"), scales.to("npu"), zero_points.to("npu"), 1, dtype)
    assert q.is_quantized and q.device.type == "npu" and q.dtype == dtype
    assert torch.equal(q.int_repr().cpu(), expected.int_repr())
    assert torch.equal(q.dequantize().cpu(), expected.dequantize())


def test_channels_last_input_keeps_its_memory_format():
    x = _values((2, 3, 4, 5), seed=2).contiguous(memory_format=torch.channels_last)
    expected = torch.quantize_per_tensor(x, 0.25, 2, torch.quint8)
    q = torch.quantize_per_tensor(x.to("npu"), 0.25, 2, torch.quint8)
    assert q.stride() == expected.stride()
    representation = q.int_repr()
    assert representation.stride() == expected.int_repr().stride()
    assert torch.equal(representation.cpu(), expected.int_repr())
    assert torch.equal(q.dequantize().cpu(), expected.dequantize())


def test_schemes_op_plugin_lacks_raise_without_crashing():
    # op-plugin registers no PrivateUse1 stub for sub-byte types or float zero points.
    x = torch.randn(3, 4, device="npu")
    with pytest.raises(RuntimeError, match="DispatchStub: missing kernel for npu"):
        torch.quantize_per_tensor(x, 0.1, 0, torch.quint4x2)
    with pytest.raises(RuntimeError, match="DispatchStub: missing kernel for npu"):
        torch.quantize_per_channel(x, torch.ones(4, device="npu"), torch.zeros(4, device="npu"), 1, torch.quint8)


def test_per_channel_parameters_must_be_on_the_device():
    x = torch.randn(3, 4, device="npu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.quantize_per_channel(x, torch.ones(4) * 0.1, torch.zeros(4, dtype=torch.long), 1, torch.qint8)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda x: torch.quantize_per_tensor(x.half(), 0.1, 0, torch.qint8), "Quantize only works on Float Tensor"),
        (lambda x: torch.quantize_per_tensor(x, 0.1, 300, torch.qint8), "zero_point 300 is above upper bound"),
        (lambda x: torch.quantize_per_tensor(x, 0.1, 0, torch.float32), "is not supported in new_qtensor"),
    ],
)
def test_bad_arguments_raise_the_cpu_errors(call, message):
    for device in ("cpu", "npu"):
        with pytest.raises(RuntimeError, match=message):
            call(torch.randn(3, device=device))


def test_empty_affine_quantized_on_npu():
    q = torch._empty_affine_quantized([2, 3], scale=0.5, zero_point=1, dtype=torch.quint8, device="npu")
    assert q.is_quantized and q.device.type == "npu" and q.dtype == torch.quint8 and q.shape == (2, 3)
    representation = q.int_repr()
    assert representation.dtype == torch.uint8 and representation.shape == (2, 3)


def test_factories_op_plugin_lacks_raise_the_dispatcher_error():
    with pytest.raises(NotImplementedError, match="_empty_per_channel_affine_quantized.*" + UNSUPPORTED):
        torch._empty_per_channel_affine_quantized(
            [2], scales=torch.ones(2), zero_points=torch.zeros(2, dtype=torch.long), axis=0, dtype=torch.qint8, device="npu"
        )
    with pytest.raises(NotImplementedError, match=UNSUPPORTED):
        torch.empty(3, dtype=torch.qint8, device="npu")


@pytest.mark.parametrize("dtype,bytes_per_element", [(torch.qint8, 1), (torch.qint32, 4)])
def test_memory_is_device_memory(dtype, bytes_per_element):
    x = torch.randn(1 << 18, device="npu")
    before = torch.npu.memory_allocated()
    q = torch.quantize_per_tensor(x, 0.1, 0, dtype)
    assert torch.npu.memory_allocated() - before >= x.numel() * bytes_per_element
    del q
    assert torch.npu.memory_allocated() == before


def test_each_operator_is_one_vector_kernel():
    x = torch.randn(64, 64, device="npu")
    start = _C._timing_totals()
    q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
    q.int_repr()
    q.dequantize()
    end = _C._timing_totals()
    assert end["launches"] - start["launches"] == 3
    assert end["device_ns_by_unit"]["vector"] > start["device_ns_by_unit"]["vector"]
    counts = _C._operator_counts()
    for name in ("aten::quantize_per_tensor", "aten::int_repr", "aten::dequantize.self"):
        assert counts.get(name, 0) >= 1


UNSUPPORTED_CALLS = {
    "add": lambda q: q + q,
    "sum": lambda q: q.sum(),
    "matmul": lambda q: torch.matmul(q, q),
    "q_scale": lambda q: q.q_scale(),
    "qscheme": lambda q: q.qscheme(),
    "repr": repr,
    "cpu": lambda q: q.cpu(),
    "view": lambda q: q.view(-1),
    "clone": lambda q: q.clone(),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_CALLS))
def test_other_operators_raise_the_dispatcher_error(name):
    q = torch.quantize_per_tensor(torch.randn(4, 4, device="npu"), 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError, match=UNSUPPORTED):
        UNSUPPORTED_CALLS[name](q)
    assert (torch.ones(3, device="npu") + 1).cpu().tolist() == [2.0, 2.0, 2.0]


def test_quantized_cpu_tensor_does_not_move_to_npu():
    q = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError, match=UNSUPPORTED):
        q.to("npu")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cpu_fallback_with_quantized_result_is_not_a_dense_npu_tensor():
    # quantize_per_tensor.tensor_qparams has no npu kernel: the CPU fallback's result moves to the
    # device with Tensor.to, as in torch_npu, which PyTorch refuses for a quantized npu tensor.
    x = torch.randn(4, device="npu")
    with pytest.raises(NotImplementedError, match=UNSUPPORTED):
        torch.quantize_per_tensor(x, torch.tensor(0.1), torch.tensor(0), torch.qint8)


def test_backward_through_quantize_matches_cpu():
    outcomes = []
    for device in ("cpu", "npu"):
        x = torch.randn(4, device=device, requires_grad=True)
        try:
            torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).dequantize().sum().backward()
            outcomes.append(("ok", x.grad is None))
        except RuntimeError as error:
            outcomes.append((type(error).__name__, str(error).split("\n")[0]))
    assert outcomes[0] == outcomes[1]


def test_estimate_only_mode_prices_without_data():
    with npusim.estimate():
        x = torch.randn(8, 16, device="npu")
        q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
        zero_points = torch.zeros(16, dtype=torch.long, device="npu")
        c = torch.quantize_per_channel(x, torch.ones(16, device="npu"), zero_points, 1, torch.quint8)
        assert q.is_quantized and c.is_quantized and q.shape == c.shape == (8, 16)
        assert q.int_repr().shape == (8, 16) and q.int_repr().dtype == torch.int8
        assert c.dequantize().shape == (8, 16)
        assert torch._empty_affine_quantized([3], dtype=torch.qint8, device="npu").is_quantized


def test_failures_leave_the_process_usable():
    code = r"""
import torch, npusim
q = torch.quantize_per_tensor(torch.randn(4, 4, device="npu"), 0.1, 0, torch.qint8)
calls = [lambda: q + q, lambda: q.sum(), lambda: q @ q, lambda: print(q), lambda: q.cpu(),
         lambda: q.dequantize().requires_grad_().sum().backward(), lambda: q.t(), lambda: q[0]]
errors = 0
for call in calls:
    try:
        call()
    except (RuntimeError, NotImplementedError):
        errors += 1
y = torch.randn(8, 8, device="npu", requires_grad=True)
(y @ y).sum().backward()
print("errors", errors, "ok", bool(torch.isfinite(y.grad).all()))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok True" in result.stdout
