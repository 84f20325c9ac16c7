"""torch_npu.profiler on npusim (contract §19): the output tree and the exact column names,
Accelerator Core from placement, OP State from shape dynamism, the experimental config, analyse,
and torch_npu.npu.mstx markers."""

from __future__ import annotations

import csv
import glob
import json
import os

import pytest
import torch
import torch_npu
from torch_npu.npu import mstx

from npusim.profiler import _ascend_output as files
from npusim_testing.fresh_process import free_port
from trace_format import problems

OUTPUT_FILES = ["trace_view.json", "kernel_details.csv", "operator_details.csv", "op_statistic.csv",
                "step_trace_time.csv", "memory_record.csv", "operator_memory.csv", "communication.json"]


def _rows(path):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, [dict(zip(header, row)) for row in reader]


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(32, 4)).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 100, (64,), device="npu")
    config = torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                                                    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
                                                    export_type=[torch_npu.profiler.ExportType.Text])
    with torch_npu.profiler.profile(
            activities=[torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU],
            schedule=torch_npu.profiler.schedule(wait=0, warmup=1, active=2, repeat=1),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(str(out)),
            record_shapes=True, profile_memory=True, with_stack=True, experimental_config=config) as prof:
        for step in range(3):
            with mstx.annotate("train_step"):
                x = torch.randn(4 + step, 16).npu()  # a new batch size each step: dynamic shapes
                loss = model(x).pow(2).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                torch.sort(ids)  # int64 sort: the AI CPU
            mstx.mark("after_step")
            prof.step()
    roots = glob.glob(os.path.join(str(out), "*_ascend_pt"))
    assert len(roots) == 1
    return roots[0]


def test_output_tree(output):
    name = os.path.basename(output)
    host_pid, _, rest = name.rpartition("_ascend_pt")[0].rpartition("_")
    assert rest.isdigit() and len(rest) == 17  # %Y%m%d%H%M%S + milliseconds
    assert host_pid.endswith(f"_{os.getpid()}")
    present = os.listdir(os.path.join(output, "ASCEND_PROFILER_OUTPUT"))
    assert sorted(OUTPUT_FILES) == sorted(present)
    assert os.path.isfile(os.path.join(output, "profiler_info_0.json"))


def test_exact_column_names(output):
    base = os.path.join(output, "ASCEND_PROFILER_OUTPUT")
    assert _rows(os.path.join(base, "kernel_details.csv"))[0] == [
        "Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
        "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Num", "Mix Block Num", "HF32 Eligible",
        "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types", "Output Formats"]
    assert _rows(os.path.join(base, "operator_details.csv"))[0] == [
        "Name", "Input Shapes", "Call Stack", "Host Self Duration(us)", "Host Total Duration(us)",
        "Device Self Duration(us)", "Device Total Duration(us)", "Device Self Duration With AICore(us)",
        "Device Total Duration With AICore(us)"]
    assert _rows(os.path.join(base, "step_trace_time.csv"))[0] == [
        "Device_id", "Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
        "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
    assert _rows(os.path.join(base, "op_statistic.csv"))[0] == files.OP_STATISTIC
    assert _rows(os.path.join(base, "memory_record.csv"))[0] == files.MEMORY_RECORD
    assert _rows(os.path.join(base, "operator_memory.csv"))[0] == files.OPERATOR_MEMORY


def test_kernel_details_placement_and_state(output):
    _, rows = _rows(os.path.join(output, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    cores = {r["Type"]: r["Accelerator Core"] for r in rows}
    assert cores["sort"] == "AI_CPU"
    assert cores["addmm"] == "AI_CORE"
    assert cores["relu"] == "AI_VECTOR_CORE"
    states = {r["Type"]: r["OP State"] for r in rows}
    assert states["addmm"] == "dynamic"  # batch 5 then 6 in the two active steps
    assert states["sort"] == "static"
    assert {r["Step Id"] for r in rows} == {"1", "2"}
    assert all(float(r["Duration(us)"]) > 0 for r in rows)
    addmm = next(r for r in rows if r["Type"] == "addmm")
    assert addmm["Input Data Types"].startswith("DT_FLOAT")


def test_steps_and_statistics(output):
    base = os.path.join(output, "ASCEND_PROFILER_OUTPUT")
    _, steps = _rows(os.path.join(base, "step_trace_time.csv"))
    assert [s["Step"] for s in steps] == ["1", "2"]
    for s in steps:
        assert float(s["Computing"]) > 0
        assert float(s["Stage"]) == pytest.approx(float(s["Computing"]) + float(s["Free"]), abs=0.01)
    _, stats = _rows(os.path.join(base, "op_statistic.csv"))
    assert any(r["OP Type"] == "sort" and r["Core Type"] == "AI_CPU" for r in stats)
    _, memory = _rows(os.path.join(base, "memory_record.csv"))
    assert memory and all(r["Device Type"] == "NPU:0" for r in memory)
    with open(os.path.join(base, "communication.json")) as f:
        assert isinstance(json.load(f), dict)


def test_dropout_kernels_are_torch_npus(output):
    # torch_npu's native_dropout: DSAGenBitMask on the secondary stream, one DropOutDoMask on the
    # current stream; its backward one DropOutDoMask. Named by CANN's op types, under aten::native_dropout.
    base = os.path.join(output, "ASCEND_PROFILER_OUTPUT")
    _, rows = _rows(os.path.join(base, "kernel_details.csv"))
    names = [r["Name"] for r in rows]
    assert names.count("DSAGenBitMask") == 2 and names.count("DropOutDoMask") == 4  # two active steps
    assert "bernoulli_" not in names and "native_dropout" not in names
    assert {r["Stream ID"] for r in rows if r["Name"] == "DSAGenBitMask"} == {"32"}
    assert {r["Stream ID"] for r in rows if r["Name"] == "DropOutDoMask"} == {"0"}
    _, stats = _rows(os.path.join(base, "op_statistic.csv"))
    counts = {r["OP Type"]: int(r["Count"]) for r in stats}
    assert counts["DSAGenBitMask"] == 2 and counts["DropOutDoMask"] == 4
    _, operators = _rows(os.path.join(base, "operator_details.csv"))
    assert any(r["Name"] == "aten::native_dropout" and float(r["Device Self Duration(us)"]) > 0 for r in operators)


def test_trace_view_valid_with_markers(output):
    path = os.path.join(output, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    assert problems(path) == []
    with open(path) as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"]}
    assert "mstx::train_step" in names and "mstx::mark::after_step" in names


def test_analyse_rewrites(output):
    target = os.path.join(output, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")
    before = open(target).read()
    os.remove(target)
    torch_npu.profiler.profiler.analyse(os.path.dirname(output))
    assert open(target).read() == before


def test_level_none_records_no_device():
    config = torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level_none)
    x = torch.randn(8, 8).npu()
    with torch_npu.profiler.profile(experimental_config=config) as prof:
        (x @ x).sum()
    assert not [e for e in prof.events() if e.name == "mm"]


def test_bad_arguments():
    with pytest.raises(ValueError):
        torch_npu.profiler._ExperimentalConfig(profiler_level="Level9")
    with pytest.raises(ValueError, match="ERR04003"):
        torch_npu.profiler.tensorboard_trace_handler("")


def test_mstx_ranges():
    assert mstx.range_push("a") == 0
    assert mstx.range_push("b") == 1
    assert mstx.range_push("c", domain="other") == 0  # depths are per domain
    assert mstx.range_pop() == 1 and mstx.range_pop() == 0
    assert mstx.range_pop() == -1
    assert mstx.range_pop(domain="other") == 0
    assert mstx.range_end(123456) is None  # an unknown id ends nothing, as torch_npu


def test_mstx_checks_its_arguments_and_calls_the_binding(monkeypatch):
    calls = []
    monkeypatch.setattr(torch_npu._C._mstx, "_mark", lambda *args: calls.append(("mark",) + args))
    monkeypatch.setattr(torch_npu._C._mstx, "_range_start_on_host", lambda *args: calls.append(args) or 7)
    with pytest.warns(UserWarning, match="Invalid message for mstx.mark function"):
        assert mstx.mark("") is None
    with pytest.warns(UserWarning, match="Invalid stream for mstx.range_start func"):
        assert mstx.range_start("x", stream=1) == 0
    with pytest.warns(UserWarning, match="Invalid domain for mstx.range_push func"):
        assert mstx.range_push("x", domain="") == -1
    stream = torch.npu.current_stream()
    mstx.mark("m", stream=stream, domain="d")
    assert mstx.range_start("r") == 7
    assert calls == [("mark", "m", stream.stream_id, stream.device_index, stream.device_type, "d"), ("r", "default")]


def test_collectives_in_the_trace_and_communication_json(tmp_path, monkeypatch):
    import torch.distributed as dist

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    dist.init_process_group("hccl", rank=0, world_size=1)
    try:
        x = torch.ones(4096, device="npu")
        with torch_npu.profiler.profile(on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(str(tmp_path))):
            dist.all_reduce(x)
            (x * 2).sum()
    finally:
        dist.destroy_process_group()
    root = glob.glob(os.path.join(str(tmp_path), "*_ascend_pt"))[0]
    base = os.path.join(root, "ASCEND_PROFILER_OUTPUT")
    with open(os.path.join(base, "trace_view.json")) as f:
        comm = [e for e in json.load(f)["traceEvents"] if e.get("name") == "hcom_allreduce"]
    assert comm and comm[0]["args"]["accelerator core"] == "COMMUNICATION"
    with open(os.path.join(base, "communication.json")) as f:
        data = json.load(f)
    assert data["step1"]["collective"]["hcom_allreduce"]["Count"] == 1
    _, rows = _rows(os.path.join(base, "kernel_details.csv"))
    assert all(r["Accelerator Core"] != "COMMUNICATION" for r in rows)
