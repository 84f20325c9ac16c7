"""Pinned host memory and data loading on npu: Tensor.pin_memory(), is_pinned, non-blocking copies,
the pinned allocator's statistics, and DataLoader(pin_memory=True) with worker processes feeding a
model on npu."""

from __future__ import annotations

import collections
import warnings

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import npusim  # noqa: F401

Sample = collections.namedtuple("Sample", ["features", "label"])


# -- pinning -------------------------------------------------------------------------------


def test_pin_memory_and_is_pinned():
    t = torch.arange(12.0).reshape(3, 4)
    assert not t.is_pinned()
    pinned = t.pin_memory()
    assert pinned.is_pinned() and pinned.device.type == "cpu"
    assert torch.equal(pinned, t) and pinned.data_ptr() != t.data_ptr()
    assert pinned.pin_memory().data_ptr() == pinned.data_ptr()  # already pinned: the same tensor
    assert pinned[1:, 2:].is_pinned()  # views of pinned memory are pinned
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch deprecates the device argument
        on_npu = t.pin_memory(device="npu")
        assert on_npu.is_pinned() and on_npu.is_pinned(device="npu")
        assert torch.equal(on_npu, t)
    storage = torch.UntypedStorage(64).pin_memory()
    assert storage.is_pinned()
    assert not torch.ones(2, device="npu").is_pinned()


def test_pinned_allocator_statistics():
    torch.npu.host_empty_cache()
    before = torch.npu.host_memory_stats()
    blocks = [torch.empty(1000, dtype=torch.uint8).pin_memory() for _ in range(3)]
    during = torch.npu.host_memory_stats()
    assert during["allocations.current"] == before["allocations.current"] + 3
    assert during["allocated_bytes.current"] >= before["allocated_bytes.current"] + 3000
    assert during["allocations.peak"] >= during["allocations.current"]
    del blocks
    after = torch.npu.host_memory_stats()
    assert after["allocations.current"] == before["allocations.current"]
    assert after["allocations.freed"] == during["allocations.freed"] + 3
    # Freed blocks stay cached until the cache is emptied.
    assert after["reserved_bytes.current"] >= during["allocated_bytes.current"] - before["allocated_bytes.current"]
    torch.npu.host_empty_cache()
    assert torch.npu.host_memory_stats()["reserved_bytes.current"] <= after["reserved_bytes.current"]


# -- copies --------------------------------------------------------------------------------


def test_non_blocking_copies_from_pinned_memory():
    source = torch.arange(24.0).reshape(4, 6).pin_memory()
    on_npu = source.to("npu", non_blocking=True)
    done = torch.npu.Event()
    done.record()
    done.synchronize()
    assert on_npu.device.type == "npu" and torch.equal(on_npu.cpu(), source)
    # A strided view, and a copy that also converts the dtype.
    view = source[1:, ::2]
    assert torch.equal(view.to("npu", non_blocking=True).cpu(), view)
    half = source.to("npu", dtype=torch.float16, non_blocking=True)
    torch.npu.synchronize()
    assert half.dtype == torch.float16 and torch.equal(half.cpu(), source.half())
    # copy_ into an existing npu tensor.
    target = torch.empty(4, 6, device="npu")
    target.copy_(source, non_blocking=True)
    torch.npu.current_stream().synchronize()
    assert torch.equal(target.cpu(), source)
    # Pageable memory with non_blocking=True is still correct (a synchronous copy).
    pageable = torch.randn(5, 5)
    assert torch.equal(pageable.to("npu", non_blocking=True).cpu(), pageable)


def test_non_blocking_copy_to_the_host_lands_in_pinned_memory():
    on_npu = torch.arange(6.0, device="npu").reshape(2, 3) * 2
    back = on_npu.to("cpu", non_blocking=True)
    torch.npu.synchronize()
    assert back.is_pinned()
    assert back.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]


def test_copies_on_a_side_stream():
    # The prefetching pattern: copy the next batch on a side stream, wait for it on the main one.
    source = torch.randn(64, 64).pin_memory()
    copy_stream = torch.npu.Stream()
    with torch.npu.stream(copy_stream):
        on_npu = source.to("npu", non_blocking=True)
    torch.npu.current_stream().wait_stream(copy_stream)
    assert torch.equal((on_npu * 1).cpu(), source)


def test_record_stream_after_a_side_stream_copy():
    copy_stream = torch.npu.Stream()
    with torch.npu.stream(copy_stream):
        on_npu = torch.ones(16).pin_memory().to("npu", non_blocking=True)
    torch.npu.current_stream().wait_stream(copy_stream)
    on_npu.record_stream(torch.npu.current_stream())
    assert on_npu.sum().item() == 16.0


# -- DataLoader ----------------------------------------------------------------------------


class Regression(Dataset):
    """Features and targets of a noisy linear map, built from the index alone (workers are
    separate processes)."""

    def __init__(self, size: int = 96):
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        generator = torch.Generator().manual_seed(index)
        features = torch.randn(8, generator=generator)
        target = features[:4] * 2 - features[4:] + 0.1 * torch.randn(4, generator=generator)
        return {"features": features, "target": target, "index": index}


class Labelled(Dataset):
    def __len__(self) -> int:
        return 40

    def __getitem__(self, index: int):
        return Sample(torch.full((3,), float(index)), index % 5)


def _loader(dataset, workers, **kwargs):
    return DataLoader(dataset, batch_size=16, shuffle=False, num_workers=workers, **kwargs)


@pytest.mark.parametrize("pin_memory_device", ["npu", None], ids=["pin_memory_device=npu", "default-device"])
def test_dataloader_with_workers_pins_every_batch(pin_memory_device):
    kwargs = {"pin_memory": True}
    if pin_memory_device:
        kwargs["pin_memory_device"] = pin_memory_device
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 2.13 deprecates pin_memory_device
        loader = _loader(Labelled(), 2, **kwargs)
        for batch in loader:
            assert isinstance(batch, Sample)
            assert batch.features.is_pinned() and batch.label.is_pinned()
            seen.extend(batch.label.tolist())
            features = batch.features.to("npu", non_blocking=True)
            assert features.device.type == "npu"
    assert seen == [i % 5 for i in range(40)]


def _train(device, loader, epochs=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses, order = [], []
    for _ in range(epochs):
        for batch in loader:
            features = batch["features"].to(device, non_blocking=True)
            target = batch["target"].to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(features), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            order.extend(batch["index"].tolist())
    return losses, order, [p.detach().cpu() for p in model.parameters()]


def test_two_workers_with_pinned_memory_feed_a_model_on_npu():
    torch.npu.host_empty_cache()
    allocated_before = torch.npu.host_memory_stats()["allocations.allocated"]
    loader = _loader(Regression(), 2, pin_memory=True, pin_memory_device="npu", persistent_workers=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        losses, order, parameters = _train("npu", loader)
    # Every batch went through the pinned allocator of the main process.
    assert torch.npu.host_memory_stats()["allocations.allocated"] >= allocated_before + 3 * len(loader)
    # The same training on CPU from a single-process loader: identical, bit for bit.
    reference = _train("cpu", _loader(Regression(), 0))
    assert order == reference[1] == list(range(96)) * 2
    assert losses == reference[0]
    assert all(torch.equal(a, b) for a, b in zip(parameters, reference[2]))
    assert losses[-1] < losses[0]
