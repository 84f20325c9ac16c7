"""The dump in msprobe's layout: step{N}/proc{pid}/dump.json with task, level, framework,
dump_data_dir and data; msprobe's entry names for APIs, modules, backward passes and parameter
gradients; the statistics of each tensor; stack.json, construct.json and the tensor files; and
the config.json filters (step, scope, list, data_mode, risk_level)."""

from __future__ import annotations

import json
import os

import pytest
import torch

import npusim  # noqa: F401  (registers npu)
from npusim.compare.dump_config import DumpConfigError, load_dump_config
from npusim.compare.hooks import DumpSession


def _dump(tmp_path, step: int = 0, **config) -> dict:
    folder = tmp_path / "dump" / f"step{step}"
    (rank,) = os.listdir(folder)
    assert rank == f"proc{os.getpid()}"
    with open(folder / rank / "dump.json") as handle:
        return json.load(handle)


def _session(tmp_path, **fields) -> DumpSession:
    task = fields.pop("task", "statistics")
    section = fields.pop("section", {})
    config = load_dump_config({"task": task, "dump_path": str(tmp_path / "dump"), "level": fields.pop("level", "mix"),
                               "risk_level": fields.pop("risk_level", "ALL"), task: section, **fields})
    return DumpSession(config)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).npu()


def _train_step(session, model, x):
    session.start(model)
    loss = (model(x) * 2).sum()
    loss.backward()
    session.stop()
    session.step()
    return loss


def test_layout_names_and_statistics(tmp_path):
    session = _session(tmp_path)
    model = _model()
    x = torch.randn(5, 4).npu()
    _train_step(session, model, x)
    session.close()
    dump = _dump(tmp_path)
    assert list(dump) == ["task", "level", "framework", "dump_data_dir", "data"]
    assert (dump["task"], dump["level"], dump["framework"], dump["dump_data_dir"]) == ("statistics", "mix", "pytorch",
                                                                                       None)
    names = list(dump["data"])
    # APIs before the module that holds them (a module's entry is complete when its forward ends).
    assert names[:6] == ["Functional.linear.0.forward", "Module.0.Linear.forward.0", "Functional.relu.0.forward",
                         "Module.1.ReLU.forward.0", "Functional.linear.1.forward", "Module.2.Linear.forward.0"]
    for expected in ("Tensor.__mul__.0.forward", "Tensor.sum.0.forward", "Tensor.sum.0.backward",
                     "Tensor.__mul__.0.backward", "Functional.linear.1.backward", "Module.2.Linear.backward.0",
                     "Module.2.Linear.parameters_grad.0", "Module.0.Linear.parameters_grad.0",
                     "Functional.linear.0.backward"):
        assert expected in names
    linear = dump["data"]["Functional.linear.0.forward"]
    assert list(linear) == ["input_args", "input_kwargs", "output"]
    record = linear["input_args"][0]
    assert list(record) == ["type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad"]
    host = x.cpu()
    assert record["type"] == "torch.Tensor" and record["dtype"] == "torch.float32" and record["shape"] == [5, 4]
    assert record["Max"] == host.max().item() and record["Min"] == host.min().item()
    assert record["Mean"] == host.mean().item() and record["Norm"] == torch.norm(host).item()
    assert record["requires_grad"] is False
    assert linear["input_args"][1]["requires_grad"] is True  # the weight
    output = model[0](x).detach().cpu()
    assert linear["output"][0]["Max"] == output.max().item()
    module = dump["data"]["Module.0.Linear.forward.0"]
    assert list(module) == ["input_args", "input_kwargs", "output", "parameters"]
    assert set(module["parameters"]) == {"weight", "bias"}
    backward = dump["data"]["Functional.linear.1.backward"]
    assert list(backward) == ["input", "output"]
    # input: the gradient of the call's output (d(sum(2y))/dy = 2 everywhere).
    assert backward["input"][0]["Max"] == 2.0 and backward["input"][0]["Min"] == 2.0
    grads = dump["data"]["Module.0.Linear.parameters_grad.0"]
    assert grads["weight"][0]["Norm"] == pytest.approx(torch.norm(model[0].weight.grad.cpu()).item())
    assert grads["weight"][0]["Norm"] == torch.norm(model[0].weight.grad.cpu()).item()


def test_integer_bool_and_scalar_records(tmp_path):
    session = _session(tmp_path)
    session.start()
    ids = torch.arange(6, device="npu")
    mask = ids > 2
    torch.where(mask, ids, 0)
    session.stop()
    session.close()
    data = _dump(tmp_path)["data"]
    arange = data["Torch.arange.0.forward"]
    assert arange["input_args"] == [{"type": "int", "value": 6}]
    assert arange["input_kwargs"] == {"device": {"type": "torch.device", "value": "npu"}}
    assert arange["output"][0]["dtype"] == "torch.int64"
    assert (arange["output"][0]["Max"], arange["output"][0]["Min"], arange["output"][0]["Mean"]) == (5, 0, None)
    greater = data["Tensor.__gt__.0.forward"]["output"][0]
    assert (greater["dtype"], greater["Max"], greater["Min"], greater["Norm"]) == ("torch.bool", True, False, None)


def test_stack_construct_and_tensor_files(tmp_path):
    session = _session(tmp_path, task="tensor")
    model = _model()
    x = torch.randn(5, 4).npu()
    _train_step(session, model, x)
    session.close()
    folder = tmp_path / "dump" / "step0" / f"proc{os.getpid()}"
    dump = json.loads((folder / "dump.json").read_text())
    assert dump["task"] == "tensor" and dump["dump_data_dir"] == str(folder / "dump_tensor_data")
    record = dump["data"]["Functional.linear.0.forward"]["input_args"][0]
    assert record["data_name"] == "Functional.linear.0.forward.input.0.pt"
    saved = torch.load(folder / "dump_tensor_data" / record["data_name"])
    assert saved.device.type == "cpu" and torch.equal(saved, x.cpu())
    parameter = dump["data"]["Module.0.Linear.forward.0"]["parameters"]["weight"]
    assert parameter["data_name"] == "Module.0.Linear.forward.0.parameters.weight.pt"
    grad = dump["data"]["Module.0.Linear.parameters_grad.0"]["weight"][0]
    assert grad["data_name"] == "Module.0.Linear.parameters_grad.0.weight.pt"
    assert torch.equal(torch.load(folder / "dump_tensor_data" / grad["data_name"]), model[0].weight.grad.cpu())
    stack = json.loads((folder / "stack.json").read_text())
    groups = {name: lines for names, lines in stack.values() for name in names}
    assert any("test_dump_layout.py" in line and "model(x)" in line for line in groups["Functional.linear.0.forward"])
    construct = json.loads((folder / "construct.json").read_text())
    assert construct["Functional.linear.0.forward"] == "Module.0.Linear.forward.0"
    assert construct["Module.0.Linear.forward.0"] is None


def test_steps_reset_counters_and_step_filter(tmp_path):
    session = _session(tmp_path, step=[1])
    model = _model()
    x = torch.randn(5, 4).npu()
    for _ in range(3):
        _train_step(session, model, x)
    session.close()
    assert sorted(os.listdir(tmp_path / "dump")) == ["step1"]
    data = _dump(tmp_path, step=1)["data"]
    # Counters restart each step: the second step's first linear is again number 0.
    assert "Functional.linear.0.forward" in data and "Functional.linear.2.forward" not in data


def test_list_scope_data_mode_and_risk_level(tmp_path):
    session = _session(tmp_path / "list", section={"list": ["relu"]})
    model = _model()
    x = torch.randn(5, 4).npu()
    _train_step(session, model, x)
    # Substrings, case and all: "relu" is not in "Module.1.ReLU.forward.0".
    assert set(_dump(tmp_path / "list")["data"]) == {"Functional.relu.0.forward", "Functional.relu.0.backward"}
    session.close()
    session = _session(tmp_path / "scope", level="L1",
                       section={"scope": ["Functional.relu.0.forward", "Tensor.__mul__.0.forward"]})
    _train_step(session, model, x)
    assert list(_dump(tmp_path / "scope")["data"])[:3] == ["Functional.relu.0.forward", "Functional.linear.1.forward",
                                                           "Tensor.__mul__.0.forward"]
    session.close()
    session = _session(tmp_path / "mode", section={"data_mode": ["forward", "output"]})
    _train_step(session, model, x)
    data = _dump(tmp_path / "mode")["data"]
    assert not any(name.endswith("backward") for name in data)
    assert list(data["Functional.linear.0.forward"]) == ["output"]
    session.close()
    session = _session(tmp_path / "core", risk_level="CORE", level="L1")
    session.start()
    y = x.reshape(4, 5).t()  # view-like: msprobe's low-risk set
    torch.matmul(y, y.t())
    session.stop()
    session.close()
    assert list(_dump(tmp_path / "core")["data"]) == ["Torch.matmul.0.forward"]


def test_config_checks_name_the_field():
    with pytest.raises(DumpConfigError, match="level is invalid"):
        load_dump_config({"level": "L3"})
    with pytest.raises(DumpConfigError, match="not supported by npusim"):
        load_dump_config({"task": "overflow_check"})
    with pytest.raises(DumpConfigError, match='formats like "3" or "3-5"'):
        load_dump_config({"step": ["1-2-3"]})
    with pytest.raises(DumpConfigError, match="data_mode"):
        load_dump_config({"statistics": {"data_mode": ["all", "input"]}})
    assert load_dump_config({"step": [0, "2-4"], "rank": []}).step == [0, 2, 3, 4]
    config = load_dump_config({})
    assert (config.task, config.level, config.dump_path, config.risk_level) == ("statistics", "L1", "./dump_path",
                                                                                "FOCUS")
