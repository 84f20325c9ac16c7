"""npusim._C._empty_strided_npu, the allocation of compiled wrappers: the same tensor as
torch.empty_strided on npu (current device, caching allocator, statistics, deterministic
fill, errors), and the wrapper Inductor writes for npu calls it."""

import math

import pytest
import torch

import npusim  # noqa: F401
from npusim import _C


def test_same_tensor_as_empty_strided():
    for size, stride, dtype in [((4, 8), (8, 1), torch.float32), ((2, 3, 5), (1, 2, 6), torch.float16),
                                ((7,), (1,), torch.int64), ((0, 3), (3, 1), torch.float32), ((), (), torch.bool)]:
        fast = _C._empty_strided_npu(size, stride, dtype)
        reference = torch.empty_strided(size, stride, dtype=dtype, device="npu")
        assert fast.device == reference.device and fast.device.type == "npu"
        assert fast.shape == reference.shape and fast.stride() == reference.stride()
        assert fast.dtype == dtype and not fast.requires_grad
        assert fast.untyped_storage().nbytes() == reference.untyped_storage().nbytes()
    # Lists are accepted too, as torch.empty_strided accepts them.
    assert _C._empty_strided_npu([3, 2], [1, 3], torch.float32).stride() == (1, 3)


def test_allocates_from_the_caching_allocator():
    torch.npu.synchronize()
    before = torch.npu.memory_stats()
    tensor = _C._empty_strided_npu((256, 256), (256, 1), torch.float32)
    during = torch.npu.memory_stats()
    assert during["allocation.all.current"] == before["allocation.all.current"] + 1
    assert during["requested_bytes.all.current"] == before["requested_bytes.all.current"] + 256 * 256 * 4
    del tensor
    after = torch.npu.memory_stats()
    assert after["allocation.all.current"] == before["allocation.all.current"]


def test_deterministic_fill_of_uninitialized_memory():
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        floats = _C._empty_strided_npu((16,), (1,), torch.float32)
        ints = _C._empty_strided_npu((16,), (1,), torch.int32)
    finally:
        torch.use_deterministic_algorithms(previous)
    assert all(math.isnan(v) for v in floats.cpu().tolist())
    assert ints.cpu().tolist() == [torch.iinfo(torch.int32).max] * 16


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="size must be a tuple"):
        _C._empty_strided_npu(4, (1,), torch.float32)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        _C._empty_strided_npu((4,), (1,), "float32")
    with pytest.raises(TypeError):
        _C._empty_strided_npu((4,), (1,))
    with pytest.raises(RuntimeError):
        _C._empty_strided_npu((-1,), (1,), torch.float32)
    with pytest.raises(torch.OutOfMemoryError, match="NPU out of memory"):
        _C._empty_strided_npu((1 << 40,), (1,), torch.float32)


def test_compiled_wrapper_allocates_through_it():
    from torch._inductor.utils import run_and_get_code

    def two_outputs(x):
        return x.sin() + 1, x.cos().sum(0)

    torch._dynamo.reset()
    x = torch.randn(32, 64, device="npu")
    compiled = torch.compile(two_outputs)
    (first, second), codes = run_and_get_code(compiled, x)
    assert "= empty_strided_npu((32, 64), (64, 1), torch.float32)" in codes[0]
    torch.testing.assert_close(first.cpu(), x.cpu().sin() + 1)
    torch.testing.assert_close(second.cpu(), x.cpu().cos().sum(0), atol=1e-4, rtol=1e-4)
    assert first.device.type == "npu" and second.device.type == "npu"
