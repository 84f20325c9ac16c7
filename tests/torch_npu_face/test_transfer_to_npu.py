"""``from torch_npu.contrib import transfer_to_npu`` runs CUDA code on npu (contract §14).

transfer_to_npu patches PyTorch for the whole process, so the cases run in subprocesses: one
shared subprocess runs the sections of the tests that use ``run_transferred`` (each section's
output is checked by its own test), the others run their own.
"""

import pytest

from npusim_testing.fresh_process import run_python

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
print(banner[0].strip().split("\\n")[2].strip())
print("torch.ones" in banner[0], "torch.Tensor.to" in banner[0], "torch.nn.Module.to" in banner[0])
"""
)


def test_banner(run_transferred):
    lines = run_transferred(_TEST_BANNER)
    assert lines[0] == "1"
    assert lines[1].startswith(
        "The torch.Tensor.cuda and torch.nn.Module.cuda are replaced with torch.Tensor.npu and torch.nn.Module.npu now"
    )
    assert lines[2].startswith("The torch.cuda.DoubleTensor is replaced with torch.npu.FloatTensor")
    assert lines[3] == "True True True"


_TEST_NO_CUDA_DEFAULT_BACKEND = section(
    """
import torch.distributed as dist
# Checked first: importing Inductor later registers its "fake" backend for cuda again, as in torch.
dist.Backend.default_device_backend_map["cuda"] = "nccl"
from npusim import _transfer_to_npu
_transfer_to_npu._patch_distributed()
print("cuda" in dist.Backend.default_device_backend_map, dist.is_nccl_available() == ("hccl" in dist.Backend.backend_list))
"""
)


def test_distributed_default_backend_and_nccl_availability(run_transferred):
    assert run_transferred(_TEST_NO_CUDA_DEFAULT_BACKEND)[0] == "False True"


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
path = "{TMP}/checkpoint.pt"
torch.save({"w": torch.ones(2).cuda()}, path)
print(torch.load(path, map_location="cuda:1")["w"].device)
print(torch.load(path, map_location={"npu:0": "cuda:2"})["w"].device)
print(torch.load(path, map_location=torch.device("cuda:3"))["w"].device)
"""
)


def test_load_map_location(run_transferred):
    lines = run_transferred(_TEST_LOAD_MAP_LOCATION)
    assert lines[:3] == ["npu:1", "npu:2", "npu:3"]


_TEST_POSITIONAL_STRINGS = section(
    """
torch.save({"w": torch.ones(1)}, "{TMP}/npu_weights.pt")
# torch_npu's rule: every positional string containing "cuda" is rewritten, file names too.
print(torch.load("{TMP}/cuda_weights.pt")["w"].device)
try:
    torch.load("{TMP}/cuda_only.pt")
except FileNotFoundError as error:
    print("missing", error.filename.rsplit("/", 1)[-1])
x = torch.ones(1)
print(x.to("cuda").device, x.to("cuda:2").device, x.to("cpu").device, torch.ones(1, device="cuda:1").to(0).device)
print(torch.ones(1).to(torch.device("cuda", 3), torch.float16).device)
"""
)


def test_positional_strings_are_rewritten_as_torch_npu_does(run_transferred):
    lines = run_transferred(_TEST_POSITIONAL_STRINGS)
    assert lines[0] == "cpu"
    assert lines[1] == "missing npu_only.pt"
    assert lines[2] == "npu:0 npu:2 cpu npu:0"
    assert lines[3] == "npu:3"


_TEST_GPU_CHECKPOINT_MAP_LOCATION_DICT = section(
    """
import io, torch.serialization as serialization
# A checkpoint as a real GPU job writes it: storages tagged "cuda:1".
real_tag = serialization.location_tag
serialization.location_tag = lambda storage: "cuda:1"
buffer = io.BytesIO()
try:
    torch.save({"w": torch.arange(3.0)}, buffer)
finally:
    serialization.location_tag = real_tag
data = buffer.getvalue()
for location in ({"cuda:0": "npu:0", "cuda:1": "npu:0"}, {"cuda:0": "cpu", "cuda:1": "cpu"},
                 {"cuda:1": "cuda:0"}, None, "cpu"):
    loaded = torch.load(io.BytesIO(data), map_location=location)["w"]
    print(loaded.device, loaded.tolist())
"""
)


def test_map_location_dictionary_maps_gpu_checkpoints(run_transferred):
    lines = run_transferred(_TEST_GPU_CHECKPOINT_MAP_LOCATION_DICT)
    assert lines[:5] == [
        "npu:0 [0.0, 1.0, 2.0]",
        "cpu [0.0, 1.0, 2.0]",
        "npu:0 [0.0, 1.0, 2.0]",
        "npu:1 [0.0, 1.0, 2.0]",
        "cpu [0.0, 1.0, 2.0]",
    ]


_TEST_DATA_PARALLEL = section(
    """
single = torch.nn.DataParallel(torch.nn.Linear(2, 2), device_ids=[0])
print(single.src_device_obj, next(single.parameters()).device, single(torch.ones(3, 2, device="cuda")).shape)
import sys
dp_module = sys.modules["torch.nn.parallel.data_parallel"]
print(dp_module._get_available_device_type())
multi = torch.nn.DataParallel(torch.nn.Linear(2, 2).cuda())
print(multi.src_device_obj, len(multi.device_ids) == torch.npu.device_count())
try:
    multi(torch.ones(4, 2, device="cuda"))
except RuntimeError as error:
    print(str(error).split(":")[0])
    print("ERR" in str(error))
try:
    torch.nn.parallel.data_parallel(torch.nn.Linear(2, 2).cuda(), torch.ones(4, 2, device="cuda"), device_ids=[0, 1])
except RuntimeError as error:
    print(str(error).split(":")[0])
"""
)


def test_data_parallel_picks_npu_and_refuses_several_devices(run_transferred):
    lines = run_transferred(_TEST_DATA_PARALLEL)
    assert lines[0] == "npu:0 npu:0 torch.Size([3, 2])"
    assert lines[1] == "npu"
    assert lines[2] == "npu:0 True"
    assert lines[3] == "DataParallel over more than one NPU is not supported"
    assert lines[4] == "True"
    assert lines[5] == "DataParallel over more than one NPU is not supported"


_TEST_JIT_SCRIPT_DISABLED = section(
    """
runtime = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
print(any(m.startswith("torch.jit.script and torch.jit.script_method will be disabled by transfer_to_npu") for m in runtime))
def f(x):
    return x + 1
print(torch.jit.script(f) is f, torch.jit.script_method(f) is f)
module = torch.nn.Linear(1, 1)
print(torch.jit.script(module) is module)
"""
)


def test_jit_script_is_disabled_with_warning(run_transferred):
    lines = run_transferred(_TEST_JIT_SCRIPT_DISABLED)
    assert lines[:3] == ["True", "True True", "True"]


_TEST_PROFILER = section(
    """
import logging, torch.profiler
print(torch.profiler.ProfilerActivity.CUDA == torch.profiler.ProfilerActivity.PrivateUse1
      or getattr(torch_npu, "profiler", None) is not None)
records = []
handler = logging.Handler(); handler.emit = records.append
logging.getLogger().addHandler(handler)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], experimental_config=object()) as prof:
    torch.ones(2, device="cuda").sum()
print(any("experimental_config of torch.profiler.profile has been deleted" in r.getMessage() for r in records))
"""
)


def test_profiler_activity_and_experimental_config(run_transferred):
    lines = run_transferred(_TEST_PROFILER)
    assert lines[:2] == ["True", "True"]


_TEST_SWAPPED_NAMES = section(
    """
npu = torch.npu
print(not hasattr(npu, "FloatTensor") or torch.cuda.DoubleTensor is npu.FloatTensor,
      not hasattr(npu, "NPUGraph") or torch.cuda.CUDAGraph is npu.NPUGraph)
import torch.distributed as dist
print(False,
      not hasattr(dist, "ProcessGroupHCCL") or dist.ProcessGroupNCCL is dist.ProcessGroupHCCL)
event = torch.Event(device="cuda")
print(event.device.type, isinstance(event, torch.Event))
print(torch.fft.fftfreq(4, device="cuda").device, torch.UntypedStorage(4, device="cuda").device.type)
print(torch.empty(2, device="cpu").new_full((1,), 1.0, device="cuda:1").device)
print(torch.cuda.memory_stats("cuda:0")["allocated_bytes.all.current"] >= 0, torch.cuda.current_stream("cuda:0").device)
print(torch.tensor([1.0], device="cuda").pin_memory("cuda").is_pinned() if False else "ok")
lazy = torch.nn.LazyLinear(3).to("cuda")
print(lazy(torch.ones(2, 4, device="cuda")).device)
"""
)


def test_swapped_names_and_device_rewriting_classes(run_transferred):
    lines = run_transferred(_TEST_SWAPPED_NAMES)
    assert lines[0] == "True True"
    assert lines[1] == "False True"
    assert lines[2] == "npu True"
    assert lines[3] == "npu:0 npu"
    assert lines[4] == "npu:1"
    assert lines[5] == "True npu:0"
    assert lines[7] == "npu:0"


_TEST_FORCED_ANSWERS = section(
    """
import torch.utils._triton, torch._utils
print(torch.utils._triton.has_triton(), torch._utils._get_available_device_type())
import torch._inductor.utils as inductor_utils
print(inductor_utils.get_gpu_type())
"""
)


def test_triton_inductor_and_device_type_answers(run_transferred):
    lines = run_transferred(_TEST_FORCED_ANSWERS)
    assert lines[:2] == ["False npu", "npu"]


_TEST_PATCHED_ON_IMPORT = section(
    """
mark = "__npusim_transfer_original__"
import torch.distributed.device_mesh as device_mesh
import torch.distributed.fsdp as fsdp
import torch.utils.cpp_extension as cpp_extension
print(hasattr(device_mesh.DeviceMesh.__init__, mark), hasattr(device_mesh.init_device_mesh, mark),
      hasattr(fsdp.FullyShardedDataParallel.__init__, mark), hasattr(cpp_extension.include_paths, mark),
      hasattr(torch.nn.parallel.DistributedDataParallel.__init__, mark))
print(cpp_extension.include_paths("cuda") == cpp_extension.include_paths("npu"))
print(not hasattr(torch.npu, "host_empty_cache") or torch._C._host_emptyCache is torch.npu.host_empty_cache)
memory = torch.npu.memory
print(all(getattr(torch.cuda.memory, name) is getattr(memory, name)
          for name in ("_record_memory_history", "_snapshot", "_dump_snapshot") if hasattr(memory, name)))
"""
)


def test_modules_patched_when_the_program_imports_them(run_transferred):
    lines = run_transferred(_TEST_PATCHED_ON_IMPORT)
    assert lines[:4] == ["True True True True True", "True", "True", "True"]


def test_third_party_functions_see_the_real_cuda_availability(autoload_folder, tmp_path):
    site = tmp_path / "site"
    package = site / "transformers" / "utils"
    package.mkdir(parents=True)
    (site / "transformers" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "import_utils.py").write_text(
        "import torch\ndef is_torch_cuda_available():\n    return torch.cuda.is_available()\n"
    )
    info = site / "transformers-4.40.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: transformers\nVersion: 4.40.0\n")
    result = run_python(
        f"""
import sys
sys.path.insert(0, {str(site)!r})
import torch, torch_npu
from torch_npu.contrib import transfer_to_npu
from transformers.utils import import_utils
print(torch.cuda.is_available(), import_utils.is_torch_cuda_available(), torch.cuda.is_available())
""",
        {"PYTHONWARNINGS": "ignore"},
        autoload_folder=autoload_folder,
    )
    assert result.returncode == 0, result.stderr
    # torch is a CPU build here: the library sees the real answer (False), the program npu's.
    assert result.stdout.strip() == "True False True"


def test_invalid_environment_value_raises(autoload_folder):
    result = run_python("import torch, npusim", {"TORCH_TRANSFER_TO_NPU": "yes"}, autoload_folder=autoload_folder)
    assert result.returncode != 0
    assert "Invalid value for TORCH_TRANSFER_TO_NPU: yes. Only '0' or '1' is supported." in result.stderr


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


def test_banner_only_on_rank_zero(autoload_folder):
    code = """
import warnings
import torch, torch_npu
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from torch_npu.contrib import transfer_to_npu
print(sum(issubclass(w.category, ImportWarning) for w in caught))
"""
    counts = []
    for rank in ("1", "0"):
        result = run_python(code, {"RANK": rank}, autoload_folder=autoload_folder)
        assert result.returncode == 0, result.stderr
        counts.append(result.stdout.strip())
    assert counts == ["0", "1"]
