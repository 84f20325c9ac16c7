"""torch_npu's options and switches: set_option, compile mode, internal format, HF32, SDPA flags,
deterministic-with-backward, core limits, op timeout, sync debug mode (issue 10)."""

from __future__ import annotations

import warnings

import pytest
import torch

import npusim  # noqa: F401
import torch_npu
from npusim_testing.fresh_process import run_python


def test_set_option_validates_as_torch_npu():
    with pytest.raises(
        ValueError,
        match=r"value of ACL_PRECISION_MODE should be in \['allow_fp32_to_fp16', 'must_keep_origin_dtype'\] "
        r"but got allow_fp32_to_fp32",
    ):
        torch.npu.set_option({"ACL_PRECISION_MODE": "allow_fp32_to_fp32"})
    with pytest.raises(TypeError, match="npu option must be a dict"):
        torch.npu.set_option("allow_fp32_to_fp32")
    with pytest.raises(RuntimeError, match="invalid npu option name:ACL_OP_SELECT_IMPL"):
        torch.npu.set_option({"ACL_OP_SELECT_IMPL": "high_precision"})
    with pytest.raises(ValueError, match="value of ACL_AICORE_NUM should be in"):
        torch.npu.set_option({"ACL_AICORE_NUM": "40"})
    torch.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype", "ACL_AICORE_NUM": 8})
    assert torch_npu._C._npu_getOption("ACL_AICORE_NUM") == b"8"
    with pytest.warns(UserWarning, match="ACL_OP_SELECT_IMPL_MODE will be deprecated"):
        torch.npu.set_option({"ACL_OP_SELECT_IMPL_MODE": "high_precision"})
    torch.npu.set_option({"MM_BMM_ND_ENABLE": "disable"})
    assert torch.npu.get_mm_bmm_format_nd() is False
    torch.npu.set_mm_bmm_format_nd(True)


def test_compile_mode():
    assert torch.npu.is_jit_compile_false()  # aclnn by default on A2
    torch.npu.set_compile_mode(jit_compile=True)
    assert not torch_npu.npu.is_jit_compile_false()
    assert torch_npu._C._npu_getOption("jitCompile") == b"enable"
    torch.npu.set_compile_mode(jit_compile=False)
    assert torch.npu.is_jit_compile_false()


def test_config_allow_internal_format_is_write_only():
    torch.npu.config.allow_internal_format = True
    assert torch_npu._C._npu_getOption("ALLOW_INTERNAL_FORMAT") == b"enable"
    torch.npu.config.allow_internal_format = False
    assert torch_npu._C._npu_getOption("ALLOW_INTERNAL_FORMAT") == b"disable"
    with pytest.raises(AttributeError):
        torch.npu.config.allow_internal_format  # noqa: B018


def test_hf32_switches_and_cube_math_type():
    assert torch.npu.matmul.allow_hf32 is False
    assert torch.npu.conv.allow_hf32 is True
    assert torch.npu.aclnn.allow_hf32 is True
    assert torch.npu.matmul.cube_math_type == torch.npu.CubeMathType.KEEP_DTYPE
    torch.npu.matmul.cube_math_type = torch_npu.npu.CubeMathType.USE_HF32
    assert torch.npu.matmul.allow_hf32 is True
    torch.npu.matmul.allow_hf32 = False
    with torch.npu.aclnn.flags(allow_hf32=False):
        assert torch.npu.conv.allow_hf32 is False
    assert torch.npu.conv.allow_hf32 is True
    with pytest.warns(UserWarning, match="torch.npu.aclnn.version isn't implemented!"):
        assert torch.npu.aclnn.version() is None
    assert [int(m) for m in torch.npu.CubeMathType] == [0, 1, 2, 3, 4]


def _hf32(values: torch.Tensor) -> torch.Tensor:
    """fp32 rounded to an 11-bit mantissa, ties away from zero (the reference of the test)."""
    bits = values.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    rounded = ((bits + 0x800) & 0xFFFFF000) & 0xFFFFFFFF
    rounded = torch.where(rounded >= 2**31, rounded - 2**32, rounded).to(torch.int32)
    return rounded.view(torch.float32)


def test_matmul_hf32_rounds_the_operands():
    torch.manual_seed(0)
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    bias = torch.randn(8)
    exact = (a.npu() @ b.npu()).cpu()
    assert torch.equal(exact, a @ b)
    torch.npu.matmul.allow_hf32 = True
    try:
        hf32 = (a.npu() @ b.npu()).cpu()
        linear = torch.nn.functional.linear(a.npu(), b.t().npu(), bias.npu()).cpu()
        batched = torch.bmm(a.npu()[None], b.npu()[None]).cpu()[0]
    finally:
        torch.npu.matmul.allow_hf32 = False
    assert torch.equal(hf32, _hf32(a) @ _hf32(b))
    assert not torch.equal(hf32, exact)
    assert torch.equal(batched, hf32)
    torch.testing.assert_close(linear, torch.addmm(bias, _hf32(a), _hf32(b)))
    assert torch.equal((a.npu() @ b.npu()).cpu(), exact)  # off again
    # bf16 / fp16 operands are not touched.
    half = a.half().npu() @ b.half().npu()
    assert torch.equal(half.cpu(), (a.half() @ b.half()))


def test_conv_hf32_is_on_by_default():
    torch.manual_seed(0)
    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
    on = torch.nn.functional.conv2d(x.npu(), w.npu()).cpu()
    torch.testing.assert_close(on, torch.nn.functional.conv2d(_hf32(x), _hf32(w)), rtol=1e-5, atol=1e-5)
    torch.npu.conv.allow_hf32 = False
    try:
        off = torch.nn.functional.conv2d(x.npu(), w.npu()).cpu()
    finally:
        torch.npu.conv.allow_hf32 = True
    torch.testing.assert_close(off, torch.nn.functional.conv2d(x, w), rtol=1e-6, atol=1e-6)
    assert not torch.equal(on, off)


def test_sdp_switches_set_the_global_flags():
    with pytest.warns(UserWarning, match="only sets the global variable"):
        torch.npu.enable_flash_sdp(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert torch.npu.flash_sdp_enabled() is False
            assert torch.backends.cuda.flash_sdp_enabled() is False
            assert torch_npu.npu.backends.math_sdp_enabled() is True
            torch.npu.enable_math_sdp(True)
            torch.npu.enable_mem_efficient_sdp(True)
            assert torch.npu.mem_efficient_sdp_enabled() is True
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.npu.enable_flash_sdp(True)


def test_deterministic_with_backward():
    x = torch.ones(3, device="npu", requires_grad=True)
    seen = []

    def hook(grad):
        seen.append(torch.are_deterministic_algorithms_enabled())
        return grad

    try:
        y = torch_npu.npu.enable_deterministic_with_backward(x * 2)
        assert torch.are_deterministic_algorithms_enabled()
        z = (y * 3)
        z.register_hook(hook)
        z = torch_npu.npu.disable_deterministic_with_backward(z)
        assert not torch.are_deterministic_algorithms_enabled()
        z.sum().backward()
        # Between the two points the backward runs deterministically; past the first, not.
        assert seen == [True]
        assert not torch.are_deterministic_algorithms_enabled()
        assert x.grad.cpu().tolist() == [6.0, 6.0, 6.0]
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.fixture()
def set_limit_again():
    """set_device_limit may be called once per process (torch_npu's rule); each call here
    re-arms it, as torch_npu's own tests do, and the process's limits are restored after."""
    properties = torch.npu.get_device_properties(0)

    def call(*args, **kwargs):
        torch.npu.set_device_limit.called = False
        return torch.npu.set_device_limit(*args, **kwargs)

    yield call
    call(0, properties.cube_core_num, properties.vector_core_num)
    torch.npu.set_device_limit.called = False


def test_device_limit(set_limit_again):
    limits = torch.npu.get_device_limit(0)
    properties = torch.npu.get_device_properties(0)
    assert limits == {"cube_core_num": properties.cube_core_num, "vector_core_num": properties.vector_core_num}
    set_limit_again(0, cube_num=8, vector_num=16)
    assert torch.npu.get_device_limit(0) == {"cube_core_num": 8, "vector_core_num": 16}
    set_limit_again(0, vector_num=-1)
    assert torch.npu.get_device_limit(0)["vector_core_num"] == 16
    with pytest.raises(ValueError, match=r"cube_num should be in \[1, "):
        set_limit_again(0, cube_num=1000)
    with pytest.raises(TypeError, match="cube_num must be an int"):
        set_limit_again(0, cube_num="8")


def test_device_limit_can_be_set_once_and_takes_an_int_device(set_limit_again):
    set_limit_again(0, cube_num=8)
    with pytest.raises(RuntimeError, match="Function 'set_device_limit' has already been called, You can only set "
                                           "this interface once."):
        torch.npu.set_device_limit(0, cube_num=4)
    assert torch.npu.get_device_limit(0)["cube_core_num"] == 8
    for device in ("0", 0.0, None, True, False, "npu:0"):
        torch.npu.set_device_limit.called = False
        with pytest.raises(TypeError, match=r"device must be an int, but got \w+\n.*ERR00002"):
            torch.npu.set_device_limit(device)
        with pytest.raises(TypeError, match="device must be an int"):
            torch.npu.get_device_limit(device)
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.get_device_limit(torch.npu.device_count())


def _mm_device_ns() -> int:
    npusim.reset_placement_report()
    a = torch.ones(512, 512, dtype=torch.float16, device="npu")
    torch.mm(a, a)
    return npusim.placement_report()["operators"]["aten::mm"]["device_ns"]


def test_device_limit_stretches_kernel_time(set_limit_again):
    cube = torch.npu.get_device_properties(0).cube_core_num
    vector = torch.npu.get_device_properties(0).vector_core_num
    full = _mm_device_ns()
    set_limit_again(0, cube_num=cube // 2)
    try:
        limited = _mm_device_ns()
    finally:
        set_limit_again(0, cube, vector)
    assert limited == pytest.approx(full * cube / (cube // 2), rel=1e-3)
    assert _mm_device_ns() == full


def test_op_timeout():
    # The binding takes an unsigned 32-bit number of milliseconds, as torch_npu's.
    torch.npu.set_op_timeout_ms(10_000)
    torch.npu.set_op_timeout_ms(0)
    with pytest.raises(OverflowError, match="can't convert negative value to unsigned int"):
        torch.npu.set_op_timeout_ms(-1)
    with pytest.raises(RuntimeError, match="Overflow when unpacking"):
        torch.npu.set_op_timeout_ms(2**32)
    with pytest.raises(TypeError, match="must be int"):
        torch.npu.set_op_timeout_ms(1.5)


def test_sync_debug_mode_checks_its_argument():
    previous = torch.npu.get_sync_debug_mode()
    try:
        for bad in (-1, 3):
            with pytest.raises(RuntimeError, match=r"invalid value of debug_mode, expected one of 0,1,2\n.*ERR00003"):
                torch.npu.set_sync_debug_mode(bad)
        with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
            torch.npu.set_sync_debug_mode("unexpected")
        with pytest.raises(RuntimeError, match="debug_mode type must long"):
            torch.npu.set_sync_debug_mode(1.0)
        torch.npu.set_sync_debug_mode("error")
        with pytest.raises(RuntimeError):
            torch.npu.set_sync_debug_mode(3)
        assert torch.npu.get_sync_debug_mode() == 2  # a refused value changes nothing
    finally:
        torch.npu.set_sync_debug_mode(previous)


def test_sync_debug_mode():
    result = run_python(
        """
        import warnings, torch, npusim
        x = torch.ones(4, device="npu")
        print(torch.npu.get_sync_debug_mode())
        torch.npu.set_sync_debug_mode("warn")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x.sum().item()
            y = x + 1  # no synchronization
        print(torch.npu.get_sync_debug_mode(), [str(w.message).split(" (Triggered")[0] for w in caught])
        torch.npu.set_sync_debug_mode(2)
        try:
            x.cpu()
        except RuntimeError as error:
            print("error:", str(error).split("\\n")[0])
        torch.npu.set_sync_debug_mode("default")
        print(x.sum().item())
        try:
            torch.npu.set_sync_debug_mode("loud")
        except RuntimeError as error:
            print("bad:", str(error).split("\\n")[0])
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "0"
    assert lines[1] == "1 ['called a synchronizing NPU operation']"
    assert lines[2] == "error: called a synchronizing NPU operation"
    assert lines[3] == "4.0"
    assert lines[4] == "bad: invalid value of debug_mode, expected one of `default`, `warn`, `error`"
