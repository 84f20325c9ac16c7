"""torch_npu modules that torch_npu's own tests and tools import: utils._path_manager,
utils._dynamo, jit, _inductor, npu._memory_viz's helpers, the _C bindings of Inductor's
wrappers, empty_with_swapped_memory, npurt's stream API, and the operators' docstrings."""

from __future__ import annotations

import ctypes
import io
import os
import stat
import warnings

import pytest
import torch

import torch_npu
from npusim_testing.fresh_process import run_python


# ------------------------------------------------------------------ utils._path_manager


def test_path_manager_checks_and_safe_operations(tmp_path):
    from torch_npu.utils._path_manager import PathManager

    directory = tmp_path / "made" / "deep"
    PathManager.make_dir_safety(str(directory))
    assert directory.is_dir() and stat.S_IMODE(directory.stat().st_mode) == 0o750
    file = directory / "data.bin"
    PathManager.create_file_safety(str(file))
    assert file.is_file() and stat.S_IMODE(file.stat().st_mode) == 0o640
    PathManager.check_directory_path_writeable(str(directory))
    PathManager.check_directory_path_readable(str(directory))
    with pytest.raises(RuntimeError, match=r"Invalid input path is a file path: \{path\}\n.*ERR00001"):
        PathManager.check_input_directory_path(str(file))
    with pytest.raises(RuntimeError, match="Invalid input path is a directory path"):
        PathManager.check_input_file_path(str(directory))
    with pytest.raises(RuntimeError, match="The path does not exist"):
        PathManager.check_directory_path_readable(str(tmp_path / "missing"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PathManager.check_input_file_path(str(tmp_path / "odd*name"))
    assert any("Invalid input path" in str(w.message) for w in caught)
    PathManager.remove_file_safety(str(file))
    PathManager.remove_path_safety(str(tmp_path / "made"))
    assert not (tmp_path / "made").exists()
    PathManager.remove_path_safety(str(tmp_path / "made"))  # nothing left: no error


# ------------------------------------------------------------------ jit, _inductor, _dynamo


def test_jit_optimize_rewrites_exact_gelu_into_fast_gelu(tmp_path):
    import torch_npu.jit

    def gelu_of_square(x):
        return torch.nn.functional.gelu(x * x)

    x = torch.rand(3, 3).npu()
    traced = torch.jit.trace(gelu_of_square, x)
    before = traced(x)
    torch_npu.jit.optimize(traced)
    kinds = [node.kind() for node in traced.graph.nodes()]
    assert "npu::fast_gelu" in kinds and "aten::gelu" not in kinds
    # A graph that already ran keeps its compiled plan; the rewritten graph runs once saved and
    # loaded (as torch_npu's own test does).
    path = tmp_path / "rewritten.pt"
    torch.jit.save(traced, str(path))
    loaded = torch.jit.load(str(path))
    assert "npu::fast_gelu" in str(loaded.graph)
    after = loaded(x)
    torch.testing.assert_close(after.cpu(), (x * x * torch.sigmoid(1.702 * x * x)).cpu())
    assert (after - before).abs().max().item() < 0.05  # the approximation's error on [0, 1]


def test_importing_torch_npu_inductor_registers_the_npu_backend():
    result = run_python(
        """
        import torch, torch_npu
        from torch._inductor.codegen.common import get_scheduling_for_device
        from torch._dynamo.device_interface import get_interface_for_device
        print(get_scheduling_for_device("npu"))
        import torch_npu._inductor
        from torch_npu.utils._dynamo import is_inductor_npu_initialized
        print(get_scheduling_for_device("npu").__name__, is_inductor_npu_initialized())
        interface = get_interface_for_device("npu")
        stream = torch.npu.Stream()
        with torch.npu.stream(stream):
            print(interface.get_raw_stream(0) == stream.npu_stream == torch_npu._C._npu_getCurrentRawStream(0)
                  == torch_npu._C._npu_getCurrentRawStreamNoWait(0))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["None", "CppScheduling True", "True"]


def test_empty_strided_npu_binding():
    t = torch_npu._C._empty_strided_npu((2, 3, 4), (1, 2, 6), torch.float16)
    assert t.device.type == "npu" and t.dtype == torch.float16
    assert t.shape == (2, 3, 4) and t.stride() == (1, 2, 6)
    assert t.untyped_storage().nbytes() == ((2 - 1) * 1 + (3 - 1) * 2 + (4 - 1) * 6 + 1) * 2  # to the last element
    empty = torch_npu._C._empty_strided_npu((0, 3), (3, 1), torch.int8)
    assert empty.numel() == 0


# ------------------------------------------------------------------ _memory_viz helpers


def test_memory_viz_frame_and_block_helpers():
    from torch_npu.npu._memory_viz import _block_extra, _frame_filter, _frame_fmt, _write_blocks

    frame = {"line": 10, "filename": "/path/to/file.py", "name": "func1"}
    assert _frame_fmt(frame) == "file.py:10:func1"
    assert _frame_fmt(frame, full_filename=True) == "/path/to/file.py:10:func1"
    assert _frame_filter("user_function", "/some/path") and not _frame_filter("PyEval_EvalFrame", "x.c")
    assert _block_extra({"frames": [frame], "requested_size": 12}) == ([frame], 12)
    out = io.StringIO()
    _write_blocks(out, "p", [{"state": "allocated", "size": 2048, "history": [{"real_size": 1024, "frames": [frame]}]}])
    assert out.getvalue() == "p;allocated;file.py:10:func1 1024\np;allocated;<gaps> 1024\n"


# ------------------------------------------------------------------ swapped memory, npurt streams


def test_empty_with_swapped_memory_is_a_torch_npu_function_that_fills_deterministically():
    t = torch_npu.empty_with_swapped_memory([4, 5], dtype=torch.float16, device="npu:0")
    assert t.device == torch.device("npu:0") and t.shape == (4, 5) and t.dtype == torch.float16
    before = torch.npu.memory_allocated()
    big = torch_npu.empty_with_swapped_memory([1024, 1024], dtype=torch.float32)
    assert torch.npu.memory_allocated() == before  # host memory, not the device's
    big.fill_(2.0)
    assert (big * 2).sum().item() == 4.0 * 1024 * 1024
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert torch_npu.empty_with_swapped_memory((3,), dtype=torch.float32).isnan().all()
        assert torch.equal(torch_npu.empty_with_swapped_memory((3,), dtype=torch.int32).cpu(),
                           torch.full((3,), 2**31 - 1, dtype=torch.int32))
        assert torch_npu.empty_with_swapped_memory((3,), dtype=torch.bool).all()
    finally:
        torch.use_deterministic_algorithms(previous)
    assert "empty_with_swapped_memory" in torch_npu.__all__


def test_npurt_stream_create_destroy_and_external_stream():
    rt = torch_npu.npu.npurt()
    handle = ctypes.c_void_p(0)
    assert rt.npuStreamCreate(ctypes.addressof(handle)) == 0 and handle.value
    try:
        external = torch_npu.npu.ExternalStream(handle.value)
        assert external.npu_stream == handle.value and isinstance(external, torch_npu.npu.Stream)
        with torch_npu.npu.stream(external):
            assert torch_npu.npu.current_stream().npu_stream == handle.value
            x = torch.ones(8, device="npu")
            y = x + 1
        torch_npu.npu.synchronize()
        assert y.sum().item() == 16
        with pytest.raises(RuntimeError, match=r"External NPU stream is not supported in NPUStream::synchronize"):
            external.synchronize()
        with pytest.raises(RuntimeError, match="Cannot query external NPU stream status"):
            external.query()
    finally:
        assert rt.npuStreamDestroy(handle.value) == 0
    assert rt.npuStreamDestroy(handle.value) == 107000  # destroyed already
    assert rt.npuStreamCreate(0) == 100000 and rt.npuStreamDestroy(0) == 100000


def test_external_stream_handle_is_unavailable_with_per_stream_queues():
    result = run_python(
        """
        import ctypes, torch_npu
        rt = torch_npu.npu.npurt()
        handle = ctypes.c_void_p(0)
        rt.npuStreamCreate(ctypes.addressof(handle))
        external = torch_npu.npu.ExternalStream(handle.value)
        try:
            external.npu_stream
        except RuntimeError as error:
            print(str(error).split("\\n")[0])
        rt.npuStreamDestroy(handle.value)
        """,
        extra_env={"PER_STREAM_QUEUE": "1", "TASK_QUEUE_ENABLE": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "External NPU stream is not supported in NPUStream::stream() with per-stream task queue."
    )


# ------------------------------------------------------------------ operator docs and public names


def test_every_torch_npu_operator_has_a_docstring_and_all_lists_the_exposed_ones():
    from npusim._torch_npu_compat._custom_ops import PUBLIC_OPERATORS, npu_operator_names

    missing = [name for name in npu_operator_names() if not getattr(torch_npu, name).__doc__]
    assert missing == []
    assert not [name for name in torch_npu.__all__ if getattr(torch_npu, name).__doc__ is None]
    operators_in_all = {name for name in torch_npu.__all__ if name in set(npu_operator_names())}
    assert operators_in_all == PUBLIC_OPERATORS & set(npu_operator_names())
    # Backward kernels are attributes of torch_npu, not public names.
    assert hasattr(torch_npu, "npu_rms_norm_backward") and "npu_rms_norm_backward" not in torch_npu.__all__
    assert torch_npu.npu_bert_apply_adam.__doc__.startswith("npu_bert_apply_adam(lr, beta1, beta2")
