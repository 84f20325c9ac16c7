"""``npusim migrate``: one test per rule kind of msFmkTransplt (contract §15), the inserted
statements, ``--specify-device``, ``distributed``, the reports of constructs that need a manual
port, and bad input."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from migration_helpers import environment, migrate_code, run
from npusim_testing.fresh_process import free_port


def changes_of(rows):
    return [(int(r[1]), r[3], r[4]) for r in rows]


def test_replace_string_rules(tmp_path):
    code, rows, _ = migrate_code(
        tmp_path,
        textwrap.dedent(
            '''\
            import torch
            a = "cuda"
            b = 'cuda:1'
            c = "cuda_model.pt"  # strict rule: not a device string
            d = f"cuda:{0}"
            e = "nccl"
            f = "NCCL_DEBUG"
            g = "uses torch.cuda.amp"
            h = "NCCL"
            '''
        ),
    )
    assert 'a = "npu"' in code and "b = 'npu:1'" in code and 'c = "cuda_model.pt"' in code
    assert 'd = f"npu:{0}"' in code and 'e = "hccl"' in code and 'f = "NCCL_DEBUG"' in code
    assert 'g = "uses torch.npu.amp"' in code and 'h = "HCCL"' in code
    assert (2, "MODIFY", 'replace string "cuda" with "npu"') in changes_of(rows)
    assert (3, "MODIFY", 'replace string "cuda:" with "npu:"') in changes_of(rows)
    assert (6, "MODIFY", 'replace string "nccl" with "hccl"') in changes_of(rows)
    assert (9, "MODIFY", 'replace string "NCCL" with "HCCL"') in changes_of(rows)
    assert (8, "MODIFY", 'replace string "torch.cuda" with "torch.npu"') in changes_of(rows)


def test_module_name_rule_follows_import_aliases(tmp_path):
    code, rows, _ = migrate_code(
        tmp_path,
        textwrap.dedent(
            """\
            import torch as th
            import torch.cuda.amp as amp
            from torch.cuda.amp import GradScaler
            from numba import cuda
            from torch import cuda as tc
            th.cuda.synchronize()
            scaler = GradScaler()
            kernel = cuda.jit(lambda: None)
            """
        ),
    )
    assert "import torch.npu.amp as amp" in code
    assert "from torch.npu.amp import GradScaler" in code
    assert "th.npu.synchronize()" in code
    assert "from torch import npu as tc" in code
    assert "from numba import cuda" in code and "cuda.jit(" in code  # not torch.cuda
    assert [c for c in changes_of(rows) if c[2] == "change module cuda to npu"] == [
        (2, "MODIFY", "change module cuda to npu"),
        (3, "MODIFY", "change module cuda to npu"),
        (5, "MODIFY", "change module cuda to npu"),
        (6, "MODIFY", "change module cuda to npu"),
    ]


def test_function_and_attribute_rules(tmp_path):
    code, rows, _ = migrate_code(
        tmp_path,
        textwrap.dedent(
            """\
            import torch
            import torch.distributed as dist
            x = torch.ones(2).cuda(non_blocking=True)
            model = torch.nn.Linear(2, 2).cuda()
            print(x.is_cuda, dist.is_nccl_available())
            graph = torch.cuda.CUDAGraph()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA], experimental_config=cfg) as p:
                pass
            """
        ),
    )
    assert "torch.ones(2).npu(non_blocking=True)" in code and "torch.nn.Linear(2, 2).npu()" in code
    assert "x.is_npu" in code and "dist.is_hccl_available()" in code
    assert "graph = torch.npu.NPUGraph()" in code
    assert (
        "with torch_npu.profiler.profile(activities=[torch_npu.profiler.ProfilerActivity.NPU]) as p:" in code
    )
    found = changes_of(rows)
    assert (3, "MODIFY", "change function cuda to npu") in found
    assert (5, "MODIFY", 'replace attribute "is_cuda" with "is_npu"') in found
    assert (5, "MODIFY", "change function is_nccl_available to is_hccl_available") in found
    assert (6, "MODIFY", "change function CUDAGraph to NPUGraph") in found
    assert (7, "DELETE", "delete the arg experimental_config of function torch_npu.profiler.profile") in found


def test_comments_and_formatting_are_kept(tmp_path):
    original = textwrap.dedent(
        """\
        import torch   # the framework


        def   step(model,x):   # odd spacing stays
            # move to the GPU
            return model(  x.cuda()  )  # trailing comment
        """
    )
    code, _, _ = migrate_code(tmp_path, original)
    assert code == original.replace("x.cuda()", "x.npu()").replace(
        "import torch   # the framework\n", "import torch   # the framework\nimport torch_npu\n"
    )


def test_import_torch_npu_is_inserted_after_the_imports_once(tmp_path):
    code, rows, _ = migrate_code(
        tmp_path,
        textwrap.dedent(
            '''\
            """Docstring."""
            from __future__ import annotations
            import os
            import torch
            import numpy as np

            DEVICE = "cuda"
            '''
        ),
    )
    lines = code.splitlines()
    assert lines[:6] == ['"""Docstring."""', "from __future__ import annotations", "import os", "import torch",
                         "import numpy as np", "import torch_npu"]
    # Recorded at the statement it was inserted before, as msFmkTransplt does.
    assert (7, "INSERT", "['import torch_npu']") in changes_of(rows)
    again, rows_again, _ = migrate_code(tmp_path / "again", code)
    assert again == code and rows_again == []


def test_no_import_without_torch_or_without_changes(tmp_path):
    code, rows, _ = migrate_code(tmp_path, 'DEVICE = "cuda"\n')
    assert code == 'DEVICE = "npu"\n' and [r[3] for r in rows] == ["MODIFY"]
    unchanged, rows, _ = migrate_code(tmp_path / "b", "import torch\nx = torch.ones(1)\n")
    assert unchanged == "import torch\nx = torch.ones(1)\n" and rows == []


def test_specify_device(tmp_path):
    original = textwrap.dedent(
        """\
        import torch
        model = torch.nn.Linear(2, 2).cuda(1)
        x = torch.ones(2).to("cuda:1")
        y = x.to("cpu")
        z = x.to(torch.float16)
        device = torch.device("cuda", 1)
        torch.cuda.set_device(3)
        state = torch.load("m.pt", map_location="cuda:2")
        host = torch.load("m.pt", map_location="cpu")
        """
    )
    code, rows, folder = migrate_code(tmp_path, original, specify_device=True)
    assert "NPU_CALCULATE_DEVICE = 0\n" in code
    assert "torch.npu.set_device(f'npu:{NPU_CALCULATE_DEVICE}')" in code
    assert "torch.nn.Linear(2, 2).npu()" in code
    assert "x = torch.ones(2).to(f'npu:{NPU_CALCULATE_DEVICE}')" in code
    assert 'y = x.to("cpu")' in code and "z = x.to(torch.float16)" in code
    assert "device = torch.device(f'npu:{NPU_CALCULATE_DEVICE}')" in code
    assert "\ntorch.npu.set_device(f'npu:{NPU_CALCULATE_DEVICE}')\nstate = " in code
    assert 'map_location=f\'npu:{NPU_CALCULATE_DEVICE}\')' in code and 'map_location="cpu"' in code
    operations = {r[3] for r in rows}
    assert operations == {"INSERT", "MODIFY", "DELETE"}
    # It runs: DEVICE_ID picks the device.
    program = folder / "program.py"
    program.write_text(code.split("model =")[0] + "print(torch.npu.current_device())\n")
    result = run([sys.executable, "-m", "npusim", "run", "--no-summary", str(program)], tmp_path,
                 extra_env={"DEVICE_ID": "2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"
    again, rows_again, _ = migrate_code(tmp_path / "again", code, specify_device=True)
    assert again == code and rows_again == []


def test_distributed_entry_and_launch_script(tmp_path):
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.py").write_text(
        textwrap.dedent(
            """\
            import torch
            from model import build


            def main():
                net = build()
                net.cuda()
                optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
                for step in range(2):
                    loss = net(torch.ones(4, 2, device="cuda")).sum()
                    loss.backward()
                    optimizer.step()
                    if torch.distributed.get_rank() == 0:
                        print("LOSS", step, loss.item())


            main()
            """
        )
    )
    (source / "model.py").write_text("import torch\n\ndef build():\n    return torch.nn.Linear(2, 1)\n")
    from npusim.migration import migrate

    result = migrate(str(source), str(tmp_path / "out"), distributed_entry="main.py", model_variable="net")
    assert result.output.endswith("project_msft_multi")
    main = open(os.path.join(result.output, "main.py")).read()
    assert "torch.distributed.init_process_group('hccl', rank=RANK_ID, world_size=RANK_SIZE)" in main
    assert (
        "    net.npu()\n    net = torch.nn.parallel.DistributedDataParallel(net, device_ids=[NPU_CALCULATE_DEVICE], "
        "broadcast_buffers=False)\n" in main
    )
    assert open(os.path.join(result.output, "model.py")).read() == (source / "model.py").read_text()
    again = migrate(result.output, str(tmp_path / "again"), distributed_entry="main.py", model_variable="net")
    assert again.changed_files == []
    script = os.path.join(result.output, "run_distributed_npu.sh")
    assert os.stat(script).st_mode & stat.S_IXUSR
    text = open(script).read()
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    assert "main.py" in text and "RANK_ID=$rank" in text and "NPU_CALCULATE_DEVICE=$((FIRST_DEVICE + rank))" in text
    import torch.distributed as dist

    import npusim  # noqa: F401

    if not dist.is_backend_available("hccl"):
        pytest.skip("hccl backend not built here: the launch script is checked, not run")
    launched = subprocess.run(
        ["bash", script],
        env=environment({"RANK_SIZE": "2", "NPU_LAUNCHER": f"{sys.executable} -m npusim run --no-summary",
                         "MASTER_PORT": str(free_port())}),
        capture_output=True, text=True, timeout=180,
    )
    logs = "".join(f"== train_rank{rank}.log\n" + open(os.path.join(result.output, f"train_rank{rank}.log")).read()
                   for rank in range(2))
    assert launched.returncode == 0, launched.stderr + logs


def test_constructs_that_need_a_manual_port_are_reported(tmp_path):
    _, _, folder = migrate_code(
        tmp_path,
        textwrap.dedent(
            """\
            import torch
            import triton
            import torch.distributed as dist
            torch.backends.cudnn.benchmark = True
            torch.backends.cuda.matmul.allow_tf32 = True
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                pass
            x = torch.ones(1, 3, 4, 4).to(memory_format=torch.channels_last)
            if dist.get_backend() == "nccl":
                pass
            model = torch.nn.DataParallel(torch.nn.Linear(2, 2))
            torch.cuda.nvtx.range_push("step")

            @triton.jit
            def kernel(pointer):
                pass
            """
        ),
    )
    from npusim.migration.reports import read_csv

    rows = read_csv(str(folder / "unsupported_api.csv"))
    assert rows[0] == ["File", "Start Line", "End Line", "OP", "Tips"]
    found = {(int(r[1]), r[3]) for r in rows[1:]}
    assert found == {
        (4, "torch.backends.cudnn.benchmark"),
        (5, "torch.backends.cuda.matmul.allow_tf32"),
        (6, "torch.cuda.CUDAGraph"),
        (7, "torch.cuda.graph"),
        (9, "torch.channels_last"),
        (10, 'dist.get_backend() == "nccl"'),
        (12, "torch.nn.DataParallel"),
        (13, "torch.cuda.nvtx.range_push"),
        (15, "triton.jit"),
    }
    assert all(r[4] for r in rows[1:])
    log = (folder / "msFmkTranspltlog.txt").read_text()
    assert "program.py:13 needs a manual port: torch.cuda.nvtx.range_push" in log


def test_unknown_precision_and_performance_reports(tmp_path):
    _, _, folder = migrate_code(
        tmp_path,
        textwrap.dedent(
            """\
            import torch
            import torch.nn.functional as F
            x = torch.randn(4, 4, device="cuda")
            y = F.not_an_api(x)
            z = torch.baddbmm(x[None], x[None], x[None])
            idx = torch.nonzero(x > 0)
            values = torch.linalg.eig(x)
            s = x.long().sort()
            optimizer = torch.optim.AdamW([x])
            """
        ),
    )
    from npusim.migration.reports import read_csv

    unknown = read_csv(str(folder / "unknown_api.csv"))[1:]
    assert [(r[1], r[3]) for r in unknown] == [("4", "torch.nn.functional.not_an_api")]
    precision = read_csv(str(folder / "api_precision_advice.csv"))[1:]
    assert [(r[1], r[3]) for r in precision] == [("5", "torch.baddbmm")]
    performance = {(r[1], r[3]): r[4] for r in read_csv(str(folder / "api_performance_advice.csv"))[1:]}
    assert "runs on the AI CPU (aten::nonzero" in performance[("6", "torch.nonzero")]
    assert "falls back to the CPU" in performance[("7", "torch.linalg.eig")]
    assert "aten::linalg_eig" in performance[("7", "torch.linalg.eig")]
    assert ("8", "torch.Tensor.sort") not in performance  # conditional (int64) rules: qualified calls only
    assert performance[("9", "torch.optim.AdamW")].startswith("Try modifying to torch_npu.optim.NpuFusedAdamW")


def test_log_rotation_settings(tmp_path):
    from npusim.migration import reports

    logger = reports.open_log(str(tmp_path))
    handler = logger.handlers[0]
    assert handler.maxBytes == 1024 * 1024 and handler.backupCount == 9
    assert handler.baseFilename.endswith("msFmkTranspltlog.txt")
    reports.close_log(logger)


def test_bad_input(tmp_path, capsys):
    from npusim.migration import migrate
    from npusim.migration.migrator import MigrationError

    source = tmp_path / "src"
    source.mkdir()
    (source / "ok.py").write_text('import torch\nd = "cuda"\n')
    (source / "broken.py").write_text('d = "cuda"\ndef (:\n')
    with pytest.raises(MigrationError, match="inside the source"):
        migrate(str(source), str(source))
    with pytest.raises(MigrationError, match="does not exist"):
        migrate(str(tmp_path / "missing"), str(tmp_path / "out"))
    with pytest.raises(MigrationError, match="entry file"):
        migrate(str(source), str(tmp_path / "out"), distributed_entry="nope.py", model_variable="m")
    from npusim.cli import main

    assert main(["migrate", str(source), "-o", str(tmp_path / "out")]) == 1
    assert "broken.py: not migrated, cannot parse" in capsys.readouterr().err
    assert (tmp_path / "out" / "src_msft" / "broken.py").read_text() == 'd = "cuda"\ndef (:\n'
    assert 'd = "npu"' in (tmp_path / "out" / "src_msft" / "ok.py").read_text()
    assert main(["migrate", str(source), "-o", str(tmp_path / "o2"), "-v", "2.1"]) == 2
    assert "no migration data for the torch_npu 2.1 line" in capsys.readouterr().err


def test_many_files_take_the_parallel_path(tmp_path, monkeypatch):
    from npusim.migration import migrate, migrator
    from npusim.migration.migrator import PARALLEL_THRESHOLD

    monkeypatch.setattr(migrator, "MIN_PARALLEL_CPUS", 2)
    monkeypatch.setattr(migrator.os, "cpu_count", lambda: 2)

    source = tmp_path / "many"
    source.mkdir()
    for index in range(PARALLEL_THRESHOLD + 4):
        (source / f"m{index:02d}.py").write_text(f'import torch\nx = torch.ones({index}, device="cuda")\n')
    (source / "plain.py").write_text("value = 1\n")
    result = migrate(str(source), str(tmp_path / "out"))
    assert [f.path for f in result.files] == sorted(p.name for p in source.iterdir())
    assert len(result.changed_files) == PARALLEL_THRESHOLD + 4
    assert (tmp_path / "out" / "many_msft" / "m07.py").read_text() == (
        'import torch\nimport torch_npu\nx = torch.ones(7, device="npu")\n'
    )
    assert (tmp_path / "out" / "many_msft" / "plain.py").read_text() == "value = 1\n"
