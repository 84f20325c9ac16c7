"""Sparse layouts on npu as torch_npu has them: COO tensors move to the device and run the sparse
kernels (here PyTorch's CPU kernels on aliases of the device memory); compressed tensors can be
built and moved, and only CSR sum/prod compute (on the CPU, with torch_npu's warning); dense npu
tensors are not converted to CSR/CSC/BSR/BSC/mkldnn (these aborted the process before)."""

from __future__ import annotations

import pytest
import torch
from npusim_testing.fresh_process import run_python


def _coo():
    indices = torch.tensor([[0, 1, 1], [2, 0, 2]])
    values = torch.tensor([3.0, 4.0, 5.0])
    return torch.sparse_coo_tensor(indices, values, (2, 3))


def test_coo_moves_to_npu_and_back():
    cpu = _coo()
    npu = cpu.coalesce().npu()
    assert npu.layout == torch.sparse_coo and npu.device.type == "npu"
    assert npu._indices().device.type == "npu" and npu._values().device.type == "npu"
    assert npu.is_coalesced() and npu._nnz() == 3
    assert torch.equal(npu.cpu().to_dense(), cpu.to_dense())
    uncoalesced = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1]]), torch.tensor([1.0, 2.0]), (2, 2)).npu()
    assert not uncoalesced.is_coalesced()
    assert uncoalesced.coalesce().to_dense().cpu().tolist() == [[0.0, 3.0], [0.0, 0.0]]


def test_coo_operators_compute_on_npu():
    cpu = _coo().coalesce()
    npu = cpu.npu()
    assert torch.equal((npu + npu).to_dense().cpu(), (cpu + cpu).to_dense())
    assert torch.equal((npu * 2).to_dense().cpu(), (cpu * 2).to_dense())
    dense = torch.randn(3, 4)
    product = torch.sparse.mm(npu, dense.npu())
    assert product.device.type == "npu" and torch.allclose(product.cpu(), torch.sparse.mm(cpu, dense))
    assert torch.sparse.sum(npu).item() == 12.0
    npu.add_(npu)  # in place: the npu tensor takes the new indices and values
    assert npu.to_dense().cpu().tolist() == [[0.0, 0.0, 6.0], [8.0, 0.0, 10.0]]
    converted = torch.eye(3, device="npu").to_sparse()
    assert converted.layout == torch.sparse_coo and converted.device.type == "npu" and converted._nnz() == 3


def test_coo_gradient_through_sparse_mm():
    sparse = _coo().coalesce().npu()
    dense = torch.randn(3, 2, device="npu", requires_grad=True)
    torch.sparse.mm(sparse, dense).sum().backward()
    expected = _coo().to_dense().t() @ torch.ones(2, 2)
    assert torch.allclose(dense.grad.cpu(), expected)


def _csr_on_npu():
    crow = torch.tensor([0, 2, 4], device="npu")
    col = torch.tensor([0, 1, 0, 1], device="npu")
    values = torch.tensor([1.0, 2.0, 3.0, 4.0], device="npu")
    return torch.sparse_csr_tensor(crow, col, values, size=(2, 2))


# Run in fresh processes: the conversions aborted the process before, and strict mode is read once.
_LAYOUTS_SCRIPT = """
import torch, npusim
x = torch.ones(4, 4, device="npu")
for convert in (lambda: x.to_sparse_csr(), lambda: x.to_sparse_csc(), lambda: x.to_sparse_bsr(2),
                lambda: x.to_sparse_bsc(2), lambda: x.to_sparse(layout=torch.sparse_csr), lambda: x.to_mkldnn()):
    try:
        convert()
        print("converted")
    except RuntimeError as error:
        first = str(error).splitlines()[0]
        print("refused" if "is not currently supported on the NPU backend." in first else first, "ERR01007" in str(error))
print(int((x + 1).sum().item()))  # the process is still usable
crow = torch.tensor([0, 2, 4], device="npu")
col = torch.tensor([0, 1, 0, 1], device="npu")
csr = torch.sparse_csr_tensor(crow, col, torch.tensor([1.0, 2.0, 3.0, 4.0], device="npu"), size=(2, 2))
print(csr.layout, csr.crow_indices().device, csr.cpu().to_dense().tolist())
try:
    for _ in range(2):
        total = torch.ops.aten._sparse_csr_sum.dim_dtype(csr, [1], True, dtype=None)
        product = torch.ops.aten._sparse_csr_prod.dim_dtype(csr, [1], True, dtype=None)
    print(total.device, total.cpu().to_dense().tolist(), product.cpu().to_dense().tolist())
    print(torch.eye(2).to_sparse_csr().npu().device)
except RuntimeError as error:
    print("refused", "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in str(error), "ERR01007" in str(error))
"""
_REFUSED_CONVERSIONS = ["refused True"] * 6 + ["32"]


def test_layout_conversions_and_csr_reductions():
    result = run_python(_LAYOUTS_SCRIPT, timeout=60)
    assert result.returncode == 0, result.stderr  # -6 (SIGABRT) before
    assert result.stdout.splitlines() == _REFUSED_CONVERSIONS + [
        "torch.sparse_csr npu:0 [[1.0, 2.0], [3.0, 4.0]]",
        "npu:0 [[3.0], [7.0]] [[2.0], [12.0]]",
        "npu:0",
    ]
    # Once per operator, as TORCH_NPU_WARN_ONCE.
    for name in ("_sparse_csr_sum", "_sparse_csr_prod"):
        warning = f"Since the NPU interface does not support operator 'aten::{name}.dim_dtype', the operator will fall back to CPU."
        assert result.stderr.count(warning) == 1, result.stderr


def test_csr_reduction_refused_in_strict_mode():
    result = run_python(_LAYOUTS_SCRIPT, {"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == _REFUSED_CONVERSIONS + [
        "torch.sparse_csr npu:0 [[1.0, 2.0], [3.0, 4.0]]",
        "refused True True",
    ]
    assert "will fall back to CPU" not in result.stderr


def test_sparse_embedding_training_step_matches_cpu():
    torch.manual_seed(0)
    reference = torch.nn.Embedding(10, 4, sparse=True)
    model = torch.nn.Embedding(10, 4, sparse=True)
    model.load_state_dict(reference.state_dict())
    model = model.npu()
    indices = torch.tensor([1, 2, 2, 5])
    for module, device in ((model, "npu"), (reference, "cpu")):
        optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
        module(indices.to(device)).pow(2).sum().backward()
        assert module.weight.grad.layout == torch.sparse_coo and module.weight.grad.device.type == device
        optimizer.step()
    assert torch.allclose(model.weight.detach().cpu(), reference.weight.detach())


def test_coo_operators_take_simulated_device_time():
    npu = _coo().coalesce().npu()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    (npu * 2 + npu).to_dense()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
