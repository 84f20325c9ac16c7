"""``npusim run --from-cuda SCRIPT``: transfer_to_npu applied without touching the script."""

import sys

from migration_helpers import run


def test_run_from_cuda(tmp_path):
    script = tmp_path / "gpu_program.py"
    script.write_text(
        "import torch\n"
        "x = torch.ones(2, device='cuda').cuda()\n"
        "print(x.device, x.is_cuda, torch.cuda.is_available(), torch.cuda.get_device_name())\n"
    )
    result = run([sys.executable, "-m", "npusim", "run", "--no-summary", "--from-cuda", str(script)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:3] == ["npu:0", "True", "True"]
    assert "Ascend" in result.stdout
