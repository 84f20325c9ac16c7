"""``from torch_npu.contrib import transfer_to_npu`` runs CUDA code on npu (contract §14).

transfer_to_npu patches PyTorch for the whole process, so the cases run in subprocesses: one
shared subprocess runs the sections of the tests that use ``run_transferred`` (each section's
output is checked by its own test), the others run their own.
"""

import pytest

from conftest import run_python

PRELUDE = """
import warnings
import torch
import torch_npu
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from torch_npu.contrib import transfer_to_npu
banner = [str(w.message) for w in caught if issubclass(w.category, ImportWarning)]
"""


SECTIONS: dict[str, str] = {}


def section(body: str) -> str:
    """Register ``body`` as a section of the shared subprocess; return its name."""
    name = f"section{len(SECTIONS)}"
    SECTIONS[name] = body
    return name


RUNNER = """
import traceback
for name, code in SECTIONS:
    print("=== " + name)
    torch.npu.set_device(0)  # each section starts on npu:0
    try:
        exec(code, dict(globals()))
    except Exception:
        print("!!! " + traceback.format_exc().replace("\\n", " | "))
"""


@pytest.fixture(scope="module")
def shared_output(autoload_folder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("transfer")
    sections = [(name, body.replace("{TMP}", str(folder))) for name, body in SECTIONS.items()]
    code = PRELUDE + f"SECTIONS = {sections!r}\n" + RUNNER
    result = run_python(code, autoload_folder=autoload_folder)
    assert result.returncode == 0, result.stdout + result.stderr
    output: dict[str, list[str]] = {}
    current = None
    for line in result.stdout.split("\n"):
        if line.startswith("=== "):
            current = output.setdefault(line[4:], [])
        elif current is not None:
            current.append(line)
    return output


@pytest.fixture()
def run_transferred(shared_output):
    """The output lines of a section registered with :func:`section`."""

    def lines_of(name: str) -> list[str]:
        lines = shared_output[name]
        assert not any(line.startswith("!!! ") for line in lines), "\n".join(lines)
        return lines

    return lines_of


_TEST_BANNER = section(
    """
print(len(banner))
print(banner[0].strip().split("\\n")[1].strip())
print("torch.ones" in banner[0], "torch.Tensor.to" in banner[0], "torch.nn.Module.to" in banner[0])
"""
)


def test_banner(run_transferred):
    lines = run_transferred(_TEST_BANNER)
    assert lines[0] == "1"
    assert lines[1].startswith(
        "The torch.Tensor.cuda and torch.nn.Module.cuda are replaced with torch.Tensor.npu and torch.nn.Module.npu now"
    )
    assert lines[2] == "True True True"


_TEST_FACTORIES_AND_TENSOR_METHODS = section(
    """
print(torch.zeros(2, device="cuda").device, torch.ones(2, device="cuda:1").device)
print(torch.randn(2, device=torch.device("cuda", 2)).device, torch.empty(1, device=3).device)
x = torch.arange(3).cuda()
print(x.device, x.is_cuda, x.to("cuda:1").device, x.to(2).device, x.to(torch.device("cuda:3")).device)
print(x.new_zeros(2).device, x.new_ones(2, device="cuda:1").device, torch.zeros_like(x, device="cuda:2").device)
print(x.to(torch.float16).dtype, x.to("cpu").device)
with torch.device("cuda:1"):
    print(torch.empty(1).device)
print(torch.tensor([1.0], device="cuda").device, torch.full((1,), 2.0, device="cuda").device)
"""
)


def test_factories_and_tensor_methods(run_transferred):
    lines = run_transferred(_TEST_FACTORIES_AND_TENSOR_METHODS)
    assert lines[0] == "npu:0 npu:1"
    assert lines[1] == "npu:2 npu:3"
    assert lines[2] == "npu:0 True npu:1 npu:2 npu:3"
    assert lines[3] == "npu:0 npu:1 npu:2"
    assert lines[4] == "torch.float16 cpu"
    assert lines[5] == "npu:1"
    assert lines[6] == "npu:0 npu:0"


_TEST_MODULE_METHODS = section(
    """
model = torch.nn.Linear(2, 2).cuda()
print(next(model.parameters()).device)
model.to("cuda:1"); print(next(model.parameters()).device)
model.to(2); print(next(model.parameters()).device)
model.to(torch.device("cuda:3")); print(next(model.parameters()).device)
print(model(torch.ones(1, 2, device="cuda:3")).device)
"""
)


def test_module_methods(run_transferred):
    lines = run_transferred(_TEST_MODULE_METHODS)
    assert lines[:5] == ["npu:0", "npu:1", "npu:2", "npu:3", "npu:3"]


_TEST_TORCH_CUDA_IS_TORCH_NPU = section(
    """
print(torch.cuda.is_available(), torch.cuda.device_count() == torch.npu.device_count())
print(torch.cuda.Stream is torch.npu.Stream, torch.cuda.Event is torch.npu.Event)
print(torch.cuda.amp.autocast is torch.npu.amp.autocast, torch.cuda.amp.GradScaler is torch.npu.amp.GradScaler)
torch.cuda.set_device("cuda:1"); print(torch.cuda.current_device())
with torch.cuda.device("cuda:2"):
    print(torch.cuda.current_device())
print(torch.cuda.get_device_name("cuda:0"), torch.cuda.memory_allocated("cuda:0") >= 0)
torch.cuda.manual_seed(3); print(torch.cuda.initial_seed())
print(torch.cuda.default_generators[0].device)
print(torch.Generator(device="cuda").device.type, isinstance(torch.Generator(), torch.Generator))
with torch.autocast("cuda", dtype=torch.bfloat16):
    print(torch.is_autocast_enabled("npu"), torch.get_autocast_dtype("npu"))
"""
)


def test_torch_cuda_is_torch_npu(run_transferred):
    lines = run_transferred(_TEST_TORCH_CUDA_IS_TORCH_NPU)
    assert lines[0] == "True True"
    assert lines[1] == "True True"
    assert lines[2] == "True True"
    assert lines[3] == "1"
    assert lines[4] == "2"
    assert lines[5].startswith("Ascend") and lines[5].endswith("True")
    assert lines[6] == "3"
    assert lines[7] == "npu:0"
    assert lines[8] == "npu True"
    assert lines[9] == "True torch.bfloat16"


_TEST_LOAD_MAP_LOCATION = section(
    """
path = "{TMP}/cuda_checkpoint.pt"
torch.save({"w": torch.ones(2).cuda()}, path)
print(torch.load(path, map_location="cuda:1")["w"].device)
print(torch.load(path, map_location={"npu:0": "cuda:2"})["w"].device)
print(torch.load(path, map_location=torch.device("cuda:3"))["w"].device)
"""
)


def test_load_map_location(run_transferred):
    lines = run_transferred(_TEST_LOAD_MAP_LOCATION)
    # The file name contains "cuda" and is left alone (a positional non-device string).
    assert lines[:3] == ["npu:1", "npu:2", "npu:3"]


def test_init_process_group_backend_rewritten(autoload_folder):
    lines = run_python(
        """
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
seen = []
def recorder(backend=None, *args, **kwargs):
    seen.append(backend)
dist.init_process_group = recorder
import torch_npu
from torch_npu.contrib import transfer_to_npu
dist.init_process_group("nccl")
dist.init_process_group(backend="cpu:gloo,cuda:nccl")
print(seen)
""",
        autoload_folder=autoload_folder,
    )
    assert lines.returncode == 0, lines.stderr
    assert lines.stdout.strip() == "['hccl', 'cpu:gloo,npu:hccl']"


def test_environment_variable_applies_it(autoload_folder):
    result = run_python(
        """
import torch
print(torch.zeros(1, device="cuda").device, torch.ones(1).cuda().is_cuda)
""",
        {"TORCH_TRANSFER_TO_NPU": "1", "PYTHONWARNINGS": "ignore"},
        autoload_folder=autoload_folder,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "npu:0 True"


_TEST_APPLYING_TWICE_IS_HARMLESS = section(
    """
from npusim import _transfer_to_npu
before = torch.Tensor.to
_transfer_to_npu.apply()
import importlib, torch_npu.contrib.transfer_to_npu as again
print(torch.Tensor.to is before, torch.ones(1).to("cuda").device)
"""
)


def test_applying_twice_is_harmless(run_transferred):
    lines = run_transferred(_TEST_APPLYING_TWICE_IS_HARMLESS)
    assert lines[0] == "True npu:0"
