"""``npusim analyse``: the report of each mode, with the columns of contract §15."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return folder


def read(path: Path):
    from npusim.migration.reports import read_csv

    return read_csv(str(path))


def test_torch_apis_writes_the_api_reports_only(tmp_path):
    from npusim.migration import analyse

    source = write(tmp_path / "proj", {"train.py": """\
        import torch
        x = torch.ones(2).cuda()
        torch.cuda.nvtx.range_push("a")
        y = torch.nonzero(x)
        """, "ops/kernel.cu": "__global__ void scale(float* x) {}\n"})
    folder = Path(analyse(str(source), str(tmp_path / "out"), "torch_apis"))
    assert folder.name == "proj_analysis"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["api_performance_advice.csv", "api_precision_advice.csv", "cuda_op_list.csv",
                     "msFmkTranspltlog.txt", "unknown_api.csv", "unsupported_api.csv"]
    assert read(folder / "unsupported_api.csv")[1][:4] == ["train.py", "3", "3", "torch.cuda.nvtx.range_push"]
    assert read(folder / "cuda_op_list.csv")[1:] == [["ops/kernel.cu", "scale (__global__ kernel)"]]
    assert [r[3] for r in read(folder / "api_performance_advice.csv")[1:]] == ["torch.nonzero"]


def test_affinity_apis(tmp_path):
    from npusim.migration import analyse

    source = write(tmp_path / "llm", {"model.py": """\
        import torch
        import torch.nn.functional as F


        def rotate_half(x):
            a, b = x.chunk(2, dim=-1)
            return torch.cat((-b, a), dim=-1)


        class Block(torch.nn.Module):
            def forward(self, q, k, v):
                return F.gelu(F.scaled_dot_product_attention(q, k, v))


        optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.ones(1))])
        """})
    folder = Path(analyse(str(source), str(tmp_path / "out"), "affinity_apis"))
    rows = read(folder / "affinity_api_call.csv")
    assert rows[0] == ["File", "Start Line", "End Line", "Api Type", "Api Call Name", "Affinity Api Name"]
    assert [tuple(r[1:]) for r in rows[1:]] == [
        ("5", "5", "Pattern", "rotate_half", "torch_npu.npu_rotary_mul"),
        ("12", "12", "Function", "torch.nn.functional.gelu", "torch_npu.fast_gelu"),
        ("12", "12", "Function", "torch.nn.functional.scaled_dot_product_attention", "torch_npu.npu_fusion_attention"),
        ("15", "15", "Optimizer", "torch.optim.AdamW", "torch_npu.optim.NpuFusedAdamW"),
    ]


def test_third_party(tmp_path):
    from npusim.migration import analyse

    source = write(tmp_path / "fastlib", {
        "__init__.py": "",
        "core.py": """\
            import torch


            def _mark(name):
                torch.cuda.nvtx.range_push(name)


            def train_step(model, batch):
                _mark("step")
                return model(batch.cuda())


            def helper():
                return torch.nn.functional.not_real(1)


            def pure(x):
                return x * 2
            """,
        "csrc/ext.cpp": 'PYBIND11_MODULE(fastlib_ext, m) { m.def("fused", &fused); }\n',
    })
    folder = Path(analyse(str(source), str(tmp_path / "out"), "third_party"))
    results = read(folder / "full_unsupported_results.csv")
    assert results[0] == ["File", "3rd-party API", "Message"]
    by_function = {(r[1], r[2].split(":")[0]) for r in results[1:]}
    # _mark is private, train_step reaches it: the unsupported NVTX call is reported on train_step.
    assert by_function == {("fastlib.core.train_step", "torch.cuda.nvtx.range_push"),
                           ("fastlib.core.helper", "torch.nn.functional.not_real")}
    assert read(folder / "framework_unsupported_op.csv")[1:] == [["torch.cuda.nvtx.range_push", "fastlib.core.train_step"]]
    assert read(folder / "unknown_op.csv")[1:] == [["torch.nn.functional.not_real", "fastlib.core.helper"]]
    assert read(folder / "migration_needed_op.csv") == [["Torch API", "Affected 3rd-party API"],
                                                         ["torch.Tensor.cuda", "fastlib.core.train_step"]]
    assert read(folder / "cuda_op.csv")[1:] == [["csrc/ext.cpp", "fused"]]


def test_dynamic_shape_runs_the_program_on_npusim(tmp_path):
    source = write(tmp_path / "prog", {"main.py": """\
        import torch


        def encode(tokens):
            return torch.nn.functional.one_hot(tokens, 5).float().cuda()


        def main():
            for length in (3, 7, 5):
                out = encode(torch.arange(length) % 5)
                assert out.device.type == "npu"
            fixed = encode(torch.zeros(2, dtype=torch.long))


        main()
        """})
    from npusim.cli import main

    assert main(["analyse", str(source), "-o", str(tmp_path / "out"), "-m", "dynamic_shape", "--run", "main.py"]) == 0
    folder = tmp_path / "out" / "prog_analysis"
    rows = read(folder / "msft_dynamic_shape_analysis_report.csv")
    assert rows[0] == ["Function Name", "File Path", "Line Number", "Call Stack", "Input Shape Range",
                       "Output Shape Range"]
    assert rows[1:] == [["encode", "main.py", "4", "main -> encode", "tokens: [2~7]", "out: [2~7, 5]"]]
    assert "@_npusim_shape_probe.record('main.py', 4)" in (folder / "instrumented" / "main.py").read_text()
    assert "dynamic shapes in: encode" in (folder / "msFmkTranspltlog.txt").read_text()


def test_unknown_mode_is_refused(tmp_path, capsys):
    from npusim.cli import main

    with pytest.raises(SystemExit) as exit:
        main(["analyse", str(tmp_path), "-o", str(tmp_path / "o"), "-m", "bogus"])
    assert exit.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_dynamic_shape_without_run_instruments_only(tmp_path):
    from npusim.migration import analyse

    source = write(tmp_path / "one", {"lib.py": """\
        class Model:
            @staticmethod
            def step(x):
                return x
        """})
    folder = Path(analyse(str(source), str(tmp_path / "out"), "dynamic_shape"))
    assert folder == tmp_path / "out" / "one_analysis"
    # The report is written by the instrumented program when it runs.
    assert not (folder / "msft_dynamic_shape_analysis_report.csv").exists()
    code = (folder / "instrumented" / "lib.py").read_text()
    assert code.startswith("from npusim.migration import shape_probe as _npusim_shape_probe\n")
    # Innermost decorator, under staticmethod.
    assert "    @staticmethod\n    @_npusim_shape_probe.record('lib.py', 3)\n    def step(x):" in code
    assert "NPUSIM_DYNAMIC_SHAPE_REPORT=" in (folder / "msFmkTranspltlog.txt").read_text()
