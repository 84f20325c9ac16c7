"""torch_npu's placement behaviour as the user sees it: texts, switches, the plog.

Each case runs in a fresh interpreter, because torch_npu reads its switches once and warns once
per process.
"""

import glob
import os
import re
import subprocess
import sys
import textwrap

import pytest

from npusim_testing.fresh_process import subprocess_env

CAUTION = (
    "CAUTION: The operator 'aten::_logcumsumexp' is not currently supported on the NPU backend and will "
    "fall back to run on the CPU. This may have performance implications."
)
STRICT = (
    "The operator 'aten::_logcumsumexp' would execute its main computation on CPU through dispatcher backend "
    "fallback because no kernel is registered for the NPU PrivateUse1 backend, but CPU fallback is disabled by "
    "TORCH_NPU_FALLBACK_CPU_DISABLE=1."
)
SUFFIX = re.compile(r"\[ERROR\] \d{4}-\d\d-\d\d-\d\d:\d\d:\d\d \(PID:\d+, Device:-?\d+, RankID:-?\d+\) ERR(\d{5}) (\w+) ")


def run(code: str, **env) -> subprocess.CompletedProcess:
    environment = subprocess_env(env)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", "import torch, npusim\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


FALLBACK_TWICE = """
x = torch.randn(4, 4, device="npu")
torch.logcumsumexp(x, 0)
torch.logcumsumexp(x, 0)
print("continued")
"""


def test_fallback_warns_once_with_torch_npus_text():
    result = run(FALLBACK_TWICE)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(CAUTION) == 1, result.stderr
    assert "continued" in result.stdout


def test_strict_mode_raises_the_exact_error_and_no_warning():
    result = run(
        """
        x = torch.randn(4, device="npu")
        try:
            torch.logcumsumexp(x, 0)
        except RuntimeError as error:
            print("ERROR:", error)
        """,
        TORCH_NPU_FALLBACK_CPU_DISABLE="1",
    )
    assert result.returncode == 0, result.stderr
    assert "ERROR: " + STRICT in result.stdout
    match = SUFFIX.search(result.stdout)
    assert match and match.group(1) == "01007" and match.group(2) == "OPS", result.stdout
    assert "CAUTION" not in result.stderr


def test_warning_disable_silences_the_caution():
    result = run(FALLBACK_TWICE, TORCH_NPU_WARNING_DISABLE="1")
    assert result.returncode == 0, result.stderr
    assert "CAUTION" not in result.stderr


def test_float64_becomes_float32_with_one_warning():
    result = run(
        """
        x = torch.ones(3, device="npu")
        print(x.double().dtype, x.to(torch.float64).dtype)
        print(torch.ones(3).double().dtype)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "torch.float32 torch.float32" in result.stdout
    assert "torch.float64" in result.stdout  # CPU tensors are untouched
    assert result.stderr.count("Device do not support double dtype now, dtype cast replace with float.") == 1


def test_unsupported_dtype_is_rejected_and_the_process_goes_on():
    result = run(
        """
        x = torch.ones(3, dtype=torch.uint64).npu()  # a copy: allocation and copies work
        try:
            x + x
        except RuntimeError as error:
            print("ERROR:", error)
        print(torch.ones(2, device="npu").sum().item())
        """
    )
    assert result.returncode == 0, result.stderr
    assert "ERROR: self scalar_type:UInt64is not surpported." in result.stdout, result.stdout
    assert "ERR01002 OPS invalid type" in result.stdout, result.stdout
    assert "AclNN_Parameter_Error(EZ1001): Tensor self not implemented for DT_UINT64" in result.stdout
    assert "2.0" in result.stdout


def test_sparse_tensors_get_the_real_error():
    result = run(
        """
        try:
            # COO moves to npu, as on torch_npu; compressed conversions of npu tensors are refused.
            torch.eye(3).npu().to_sparse_csr()
        except RuntimeError as error:
            print("ERROR:", error)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "is not currently supported on the NPU backend." in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize(
    "variable,value,message",
    [
        ("TASK_QUEUE_ENABLE", "3", "TASK_QUEUE_ENABLE should be 0, 1 or 2"),
        ("ASCEND_GLOBAL_LOG_LEVEL", "7", "ASCEND_GLOBAL_LOG_LEVEL should be 0, 1, 2, 3 or 4."),
        ("ASCEND_LAUNCH_BLOCKING", "yes", "ASCEND_LAUNCH_BLOCKING should be 0 or 1"),
    ],
)
def test_switches_are_validated_with_the_real_messages(variable, value, message):
    result = run(
        """
        try:
            torch.ones(2, device="npu")
        except RuntimeError as error:
            print("ERROR:", error)
        """,
        **{variable: value},
    )
    assert message in result.stdout, result.stdout + result.stderr


def test_compact_error_output_keeps_the_detail_for_the_plog(tmp_path):
    result = run(
        """
        try:
            torch.npu.set_device(99)
        except RuntimeError as error:
            print("ERROR:", error)
        """,
        TORCH_NPU_COMPACT_ERROR_OUTPUT="1",
        ASCEND_PROCESS_LOG_PATH=str(tmp_path),
    )
    assert (
        "ERROR: CANN error: The argument is invalid.Reason: Set device failed, invalid device, set drv device=99, "
        "valid device range is [0, 8)" in result.stdout
    ), result.stdout
    assert "ERR00100" not in result.stdout
    logs = glob.glob(str(tmp_path / "debug" / "plog" / "plog-*.log"))
    assert logs, "no plog written"
    text = open(logs[0]).read()
    assert "[ERROR] APP(" in text and "[PTA]:" in text and "107001" in text and "ERR00100 PTA" in text


def test_fallbacks_and_strict_errors_reach_the_plog(tmp_path):
    result = run(FALLBACK_TWICE, ASCEND_PROCESS_LOG_PATH=str(tmp_path), ASCEND_GLOBAL_LOG_LEVEL="1")
    assert result.returncode == 0, result.stderr
    text = "".join(open(p).read() for p in glob.glob(str(tmp_path / "debug" / "plog" / "plog-*.log")))
    assert re.search(r"\[WARNING\] APP\(\d+,[^)]*\):\S+ \[\S+:\d+\]\d+ \[PTA\]:" + re.escape(CAUTION), text), text


def test_zero_fills_take_the_unsigned_dtypes_that_computing_operators_refuse():
    """torch_npu's own tests (test/npu/test_c10d.py, 2.13 tag) zero-fill uint16/32/64 npu tensors."""
    result = run(
        """
        for dtype in (torch.uint16, torch.uint32, torch.uint64):
            x = torch.ones(3, dtype=dtype).npu()
            z = torch.zeros_like(x)
            print(dtype, z.cpu().tolist(), x.zero_().cpu().tolist())
            try:
                x + x
            except RuntimeError as error:
                print("still refused:", "is not surpported" in str(error))
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("still refused: True") == 3, result.stdout
    for name in ("uint16", "uint32", "uint64"):
        assert f"torch.{name} [0, 0, 0] [0, 0, 0]" in lines, result.stdout


def test_structured_operator_falls_back_through_its_out_kernel_with_torch_npus_c10_warning():
    # torch_npu's own test (test_fault_mode.test_not_supported_ops): t.fmax(t) runs fmax's out= kernel,
    # which has no NPU kernel; the warning goes through c10's base handler to stderr, not Python warnings.
    result = run(
        """
        t = torch.rand(1, 3, 3).npu()
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert torch.equal(t.fmax(t).cpu(), t.cpu())
        print("python warnings:", sum("CAUTION" in str(w.message) for w in caught))
        """
    )
    assert result.returncode == 0, result.stderr
    expected = (
        "Warning: CAUTION: The operator 'aten::fmax.out' is not currently supported on the NPU backend and will fall "
        "back to run on the CPU. This may have performance implications. (function npu_cpu_fallback)"
    )
    assert re.search(r"\[W\d{4} [\d:.]+ compiler_depend\.ts:51\] " + re.escape(expected), result.stderr), result.stderr
    assert "python warnings: 0" in result.stdout
