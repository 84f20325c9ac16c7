"""torch_npu's NPU sanitizer over npusim's device trace: data races between streams, missing
record_stream, the trace callbacks themselves and the kernel mode. Each case runs in a fresh
interpreter (the trace stays on once activated, as in torch_npu)."""

from __future__ import annotations

from npusim_testing.fresh_process import run_python

SETUP = """
import os, torch, torch_npu
import torch.cuda._sanitizer as csan
import torch_npu.npu._sanitizer as sanitizer
sanitizer.npu_sanitizer.enable()
handler = sanitizer.npu_sanitizer.event_handler
"""


def test_an_unsynchronized_read_on_another_stream_is_a_data_race():
    result = run_python(SETUP + """
x = torch.randn(100, device="npu")
stream = torch_npu.npu.Stream()
try:
    with torch_npu.npu.stream(stream):
        x + 1
except csan.CUDASanitizerErrors as errors:
    print("race", len(errors.errors))
stream.wait_stream(torch_npu.npu.default_stream())
with torch_npu.npu.stream(stream):
    x + 1  # ordered after the write: no race
print("ordered ok")
""", extra_env={"TORCH_NPU_SANITIZER": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["race", "1", "ordered", "ok"]
    assert "CSAN detected a possible data race on tensor with data pointer" in result.stderr


def test_missing_record_stream_is_reported_when_the_memory_is_freed():
    result = run_python(SETUP + """
import gc
stream = torch_npu.npu.Stream()
x = torch.randn(100, device="npu")
stream.wait_stream(torch_npu.npu.default_stream())
with torch_npu.npu.stream(stream):
    x + 1
del x
gc.collect()
print("missing", len(handler.record_stream_errors))
y = torch.randn(100, device="npu")
y.record_stream(stream)
stream.wait_stream(torch_npu.npu.default_stream())
with torch_npu.npu.stream(stream):
    y + 1
print("recorded", len(handler.flush_record_stream_warnings()))
z = torch.randn(100, device="npu")
stream.wait_stream(torch_npu.npu.default_stream())
with torch_npu.npu.stream(stream):
    z + 1
torch_npu.npu.synchronize()  # a device synchronization covers every use
print("synchronized", len(handler.flush_record_stream_warnings()))
""", extra_env={"TORCH_NPU_SANITIZER": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["missing", "1", "recorded", "0", "synchronized", "0"]
    assert "NPUSanitizer: missing record_stream detected!" in result.stderr


def test_trace_callbacks_hear_memory_streams_and_events():
    result = run_python("""
import torch, torch_npu
import torch_npu.utils._npu_trace as npu_trace
seen = []
for kind in ("memory_allocation", "memory_deallocation", "stream_creation", "event_record", "event_wait",
             "stream_synchronization", "device_synchronization", "record_stream"):
    getattr(npu_trace, "register_callback_for_npu_" + kind)(
        lambda *args, kind=kind: seen.append(kind), kind)
torch_npu._C._activate_npu_trace(0)
x = torch.ones(16, device="npu")
stream = torch_npu.npu.Stream()
stream.wait_stream(torch_npu.npu.current_stream())
x.record_stream(stream)
stream.synchronize()
torch_npu.npu.synchronize()
del x
print(sorted(set(seen)))
""")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(sorted({
        "memory_allocation", "memory_deallocation", "stream_creation", "event_record", "event_wait",
        "stream_synchronization", "device_synchronization", "record_stream"}))


def test_kernel_mode_prints_each_operator(tmp_path):
    opp = tmp_path / "opp"
    (opp / "built-in" / "op_impl" / "ai_core" / "tbe" / "kernel").mkdir(parents=True)
    debug = tmp_path / "debug"
    (debug / "built-in" / "op_impl" / "ai_core" / "tbe" / "kernel").mkdir(parents=True)
    result = run_python("""
import os, torch, torch_npu
import torch_npu.npu._sanitizer as sanitizer
sanitizer.npu_sanitizer.enable()
print(sanitizer.npu_sanitizer.mode, os.environ["ASCEND_LAUNCH_BLOCKING"], os.path.islink(
    os.path.join(os.environ["ASCEND_OPP_PATH"], "built-in/op_impl/ai_core/tbe/kernel")))
torch.ones(4, device="npu").add(1)
""", extra_env={"ASCEND_OPP_PATH": str(opp), "ASCEND_OPP_DEBUG_PATH": str(debug)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "1 1 True"
    assert "====== Start acl operator aten::add.Tensor" in result.stdout
    assert "====== aten::add.Tensor python stack info:" in result.stdout
    assert not (tmp_path / "opp_debug_path").exists()  # removed at exit
