"""torch.save / torch.load of npu tensors (PrivateUse1 doc §3.9)."""

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import run_python


@pytest.fixture()
def checkpoint(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({"weight": torch.arange(6.0, device="npu:1").reshape(2, 3), "step": torch.tensor(7)}, path)
    return path


def test_round_trip_keeps_device(checkpoint):
    loaded = torch.load(checkpoint)
    assert loaded["weight"].device == torch.device("npu:1")
    assert torch.equal(loaded["weight"].cpu(), torch.arange(6.0).reshape(2, 3))
    assert loaded["step"].device.type == "cpu"


@pytest.mark.parametrize(
    "map_location, expected",
    [
        ("cpu", "cpu"),
        ("npu", "npu:0"),
        ("npu:2", "npu:2"),
        (torch.device("npu:3"), "npu:3"),
        ({"npu:1": "npu:4"}, "npu:4"),
        ({"npu:1": "cpu"}, "cpu"),
    ],
)
def test_map_location(checkpoint, map_location, expected):
    loaded = torch.load(checkpoint, map_location=map_location)
    assert str(loaded["weight"].device) == expected
    assert torch.equal(loaded["weight"].cpu(), torch.arange(6.0).reshape(2, 3))


def test_module_state_dict(tmp_path):
    model = torch.nn.Linear(3, 2).npu()
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    fresh = torch.nn.Linear(3, 2)
    fresh.load_state_dict(torch.load(path, map_location="cpu"))
    assert torch.equal(fresh.weight, model.weight.cpu())


def test_checkpoint_from_a_missing_device(tmp_path):
    path = tmp_path / "on_npu3.pt"
    torch.save(torch.ones(3, device="npu:3"), path)
    result = run_python(
        f"""
        import torch, npusim
        print(torch.npu.device_count())
        try:
            torch.load({str(path)!r})
            print("loaded")
        except RuntimeError as error:
            print("error:", error)
        print(torch.load({str(path)!r}, map_location="npu:1").device)
        print(torch.load({str(path)!r}, map_location="cpu").sum().item())
        """,
        {"NPUSIM_DEVICE_COUNT": "2"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "2"
    assert lines[1].startswith("error: ")
    assert "device 3" in lines[1] and "map_location" in lines[1]
    assert lines[2] == "npu:1"
    assert lines[3] == "3.0"
