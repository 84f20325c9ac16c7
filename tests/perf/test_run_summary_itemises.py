"""The run summary itemises everything it prices: casts, fused RNN layers and cells in the operator table and
placement counts, syncs labelled by what the user wrote, per-step figures that say what they are."""

import math
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import npusim
from npusim_testing.fresh_process import subprocess_env

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _counts():
    report = npusim.placement_report()
    return report, {name: c["ai_core"] + c["ai_cpu"] + c["cpu_fallback"] for name, c in report["operators"].items()}


@pytest.fixture
def fresh_reports():
    torch.npu.synchronize()
    npusim.reset_performance_report()
    npusim.reset_placement_report()
    yield


def test_lstm_layers_are_one_fused_kernel_per_layer_and_every_launch_is_itemised(fresh_reports):
    # torch_npu runs nn.LSTM as one npu_lstm kernel per layer (and direction) for the whole
    # sequence, and one npu_lstm_backward kernel each.
    lstm = torch.nn.LSTM(32, 64, num_layers=2).npu()
    x = torch.randn(5, 3, 32, device="npu")
    npusim.reset_performance_report()
    npusim.reset_placement_report()
    out, _ = lstm(x)
    out.sum().backward()
    _, counts = _counts()
    assert counts["npu::npu_lstm"] == 2
    assert counts["npu::npu_lstm_backward"] == 2
    assert "aten::_thnn_fused_lstm_cell" not in counts and "aten::mm" not in counts
    assert npusim.performance_report()["launches"] == sum(counts.values())


def test_lstm_cells_are_one_fused_kernel_each_and_every_launch_is_itemised(fresh_reports):
    cell = torch.nn.LSTMCell(32, 64).npu()
    x = torch.randn(5, 3, 32, device="npu")
    npusim.reset_performance_report()
    npusim.reset_placement_report()
    h = c = torch.zeros(3, 64, device="npu")
    for step in range(5):
        h, c = cell(x[step], (h, c))
    h.sum().backward()
    _, counts = _counts()
    assert counts["aten::_thnn_fused_lstm_cell"] == 5  # one kernel per time step
    assert counts["aten::_thnn_fused_lstm_cell_backward_impl"] == 5
    assert npusim.performance_report()["launches"] == sum(counts.values())


def test_gru_layers_and_cells_are_itemised(fresh_reports):
    gru = torch.nn.GRU(16, 16).npu()
    cell = torch.nn.GRUCell(16, 16).npu()
    npusim.reset_performance_report()
    npusim.reset_placement_report()
    gru(torch.randn(4, 2, 16, device="npu"))[0].sum().backward()
    h = torch.zeros(2, 16, device="npu")
    for step in range(4):
        h = cell(torch.randn(2, 16, device="npu"), h)
    h.sum().backward()
    _, counts = _counts()
    assert counts["npu::npu_gru"] == 1 and counts["npu::npu_gru_backward"] == 1
    assert counts["aten::_thnn_fused_gru_cell"] == 4
    assert counts["aten::_thnn_fused_gru_cell_backward"] == 4
    assert npusim.performance_report()["launches"] == sum(counts.values())


def test_autocast_casts_are_in_the_operator_table(fresh_reports):
    linear = torch.nn.Linear(64, 64).npu()
    x = torch.randn(8, 64, device="npu")
    npusim.reset_performance_report()
    npusim.reset_placement_report()
    with torch.autocast("npu", dtype=torch.bfloat16):
        linear(x)
    report, counts = _counts()
    assert counts["aten::_to_copy"] == 3  # input, weight, bias cast to bf16
    assert report["operators"]["aten::_to_copy"]["device_ns"] > 0
    assert npusim.performance_report()["launches"] == sum(counts.values())


def _sync_labels():
    return {(s["what"], s["count"]) for s in npusim.placement_report()["sync_points"]}


def test_syncs_are_labelled_by_what_the_user_wrote(fresh_reports, tmp_path):
    t = torch.ones(4, device="npu")
    if t.all():
        pass
    t.tolist()
    t.sum().item()
    float(t.sum())
    labels = {what for what, _ in _sync_labels()}
    assert "bool(t.all())" in labels
    assert "t.tolist()" in labels
    assert "t.sum().item()" in labels
    assert "float(t.sum())" in labels


class _Classifier(torch.nn.Module):
    """A model of the program's own whose forward calls a torch module that synchronizes
    (AdaptiveLogSoftmaxWithLoss selects the rows of each cluster with nonzero)."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4])

    def forward(self, x, target):
        return self.head(x, target).loss


def test_sync_labels_are_the_calls_the_user_wrote_not_guesses(fresh_reports):
    # Before: `scaler.step(optimizer)` was labelled "Tensor.step", `self.head(x, target)` "Tensor.head".
    model = _Classifier().npu()
    x = torch.randn(8, 16, device="npu")
    target = torch.randint(0, 10, (8,), device="npu")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("npu")
    head = model.head
    loss = model(x, target)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    head(x, target)
    labels = {what.split(" (aten::")[0] for what, _ in _sync_labels()}
    assert "scaler.step(optimizer)" in labels  # a GradScaler loop
    assert "self.head(x, target)" in labels  # an attribute call, inside the program's own model
    assert "head(x, target)" in labels  # a model call
    assert not any(label.startswith("Tensor.") for label in labels), labels


def test_npusim_own_synchronizations_are_not_in_the_summary(tmp_path):
    script = tmp_path / "program.py"
    script.write_text("import torch\nx = torch.ones(3, device='npu')\nprint(x.sum().item())\n")
    done = subprocess.run([sys.executable, "-m", "npusim", "run", "--report", str(tmp_path / "r.html"), str(script)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=subprocess_env())
    assert done.returncode == 0, done.stderr[-3000:]
    syncs = [line for line in done.stderr.splitlines() if "sync point:" in line]
    assert syncs == [f"[npusim]     sync point: x.sum().item() x1 at {script}:3"], done.stderr
    page = (tmp_path / "r.html").read_text()
    assert "torch.npu.synchronize()" not in page and "no user frame" not in page


def test_torch_save_of_a_state_dict_is_one_sync_per_call(fresh_reports, tmp_path):
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(5)]).npu()
    torch.save(model.state_dict(), tmp_path / "a.pt")
    torch.save(model.state_dict(), tmp_path / "b.pt")
    saves = [s for s in npusim.placement_report()["sync_points"] if s["what"].startswith("torch.save(")]
    assert len(saves) == 2  # two call sites (lines), ten tensors each
    assert all(s["count"] == 1 for s in saves)


def test_marked_steps_give_the_mean_time_between_marks(fresh_reports):
    x = torch.randn(256, 256, device="npu")
    for _ in range(4):
        x @ x
        npusim.step()
    for _ in range(20):  # evaluation after the last step: not part of the per-step figure
        x @ x
    report = npusim.performance_report(steps=100)
    assert report["steps_source"] == "marked"
    assert report["steps"] == 3
    assert report["step_s"] < report["elapsed_s"] / 10


def _npusim_run(tmp_path, code: str, *arguments: str) -> subprocess.CompletedProcess:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, "-m", "npusim", "run", *arguments, str(script)], capture_output=True,
                          text=True, timeout=120)


def test_steps_option_says_what_it_divided(tmp_path):
    result = _npusim_run(tmp_path, """
        import torch
        x = torch.randn(64, 64, device="npu")
        for _ in range(3):
            x @ x
    """, "--steps", "3")
    assert result.returncode == 0, result.stderr
    assert "divided by --steps 3" in result.stderr
    assert "npusim.step()" in result.stderr


def test_a_run_that_fails_before_its_steps_prints_no_per_step_figure(tmp_path):
    result = _npusim_run(tmp_path, """
        import torch
        x = torch.randn(64, 64, device="npu")
        x @ x
        raise RuntimeError("data loader broke")
    """, "--steps", "10")
    assert result.returncode == 1
    assert "per step" not in result.stderr
    assert "no per-step figure" in result.stderr


def test_warnings_do_not_show_the_build_directory(tmp_path):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import warnings, torch, npusim
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            p = torch.nn.Parameter(torch.ones(4, device="npu"))
            p.grad = torch.ones(4, device="npu")
            torch.optim.Adam([p], fused=True).step()  # _fused_adam_ has no NPU kernel in 2.13
            torch.ones(2, device="npu").double()  # torch_npu casts to float32 instead, with a warning
        print("\\n".join(str(w.message) for w in caught))
    """)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # Python warnings name the source file relative to the project, never the build directory.
    assert "Device do not support double dtype now" in result.stdout
    assert "build" not in result.stdout and "../" not in result.stdout
    assert "Triggered internally at csrc/backend/" in result.stdout
    # The fallback CAUTION is printed on stderr as torch_npu prints it, under its own file name.
    caution = [line for line in result.stderr.splitlines() if "CAUTION" in line]
    assert caution and all("compiler_depend.ts:51]" in line and "build" not in line for line in caution), result.stderr


def test_gpt_example_starts_near_ln_vocab():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import gpt_transformer
    finally:
        sys.path.remove(str(EXAMPLES))
    losses = gpt_transformer.train("npu", steps=2)
    assert abs(losses[0] - math.log(512)) < 0.3


_CONVOLUTION_PROGRAM = """\
import torch
{switch}
conv = torch.nn.Conv2d(3, 4, 3).npu()
print(conv(torch.randn(1, 3, 8, 8, device="npu")).sum().item())
"""


@pytest.mark.parametrize("allow_hf32", [True, False])
def test_summary_says_when_convolutions_ran_in_hf32(tmp_path, allow_hf32):
    script = tmp_path / "program.py"
    switch = "" if allow_hf32 else "torch.npu.conv.allow_hf32 = False"
    script.write_text(_CONVOLUTION_PROGRAM.format(switch=switch))
    done = subprocess.run([sys.executable, "-m", "npusim", "run", str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=subprocess_env())
    assert done.returncode == 0, done.stderr[-3000:]
    numerics = [line for line in done.stderr.splitlines() if "numerics:" in line]
    if allow_hf32:
        assert numerics == ["[npusim]   numerics: 1 fp32 convolution calls ran in HF32 (torch_npu's default "
                            "torch.npu.conv.allow_hf32 = True), so results differ from an fp32 CPU run; "
                            "torch.npu.conv.allow_hf32 = False computes them in fp32"], done.stderr
    else:
        assert numerics == [], done.stderr
