"""``nn.DataParallel`` with npu modules, with or without transfer_to_npu: one device works (the
inputs move to it), several devices raise torch_npu-style "not supported" (torch_npu has no
multi-device DataParallel; PyTorch's own path fails with ``torch._C`` has no ``_scatter``)."""

import pytest
import torch

import npusim  # noqa: F401


def test_one_device_runs_and_matches_the_module():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2).npu()
    parallel = torch.nn.DataParallel(layer, device_ids=[0])
    x = torch.randn(4, 3)
    assert torch.equal(parallel(x.npu()).cpu(), layer(x.npu()).cpu())
    assert torch.equal(parallel(x).cpu(), layer(x.npu()).cpu())  # host inputs are moved, as scatter does


def test_several_devices_are_refused_clearly():
    parallel = torch.nn.DataParallel(torch.nn.Linear(3, 2).npu())
    assert len(parallel.device_ids) == torch.npu.device_count() > 1
    with pytest.raises(RuntimeError, match="DataParallel over more than one NPU is not supported") as error:
        parallel(torch.ones(4, 3, device="npu"))
    assert "ERR00007" in str(error.value)
    with pytest.raises(RuntimeError, match="DataParallel over more than one NPU is not supported"):
        torch.nn.parallel.data_parallel(torch.nn.Linear(3, 2).npu(), torch.ones(4, 3, device="npu"), device_ids=[0, 1])


def test_one_other_device():
    parallel = torch.nn.DataParallel(torch.nn.Linear(3, 2).npu(), device_ids=[1])
    assert next(parallel.parameters()).device == torch.device("npu:1")
    assert parallel(torch.ones(2, 3)).device == torch.device("npu:1")
