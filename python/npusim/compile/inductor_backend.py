"""Inductor for the npu device: the C++ (CPU) code generator on simulated device memory.

npusim's device memory is host memory (DESIGN.md, execution model), so the vectorised C++
kernels Inductor writes for CPU run on npu buffers as they are: the wrapper passes the data
pointers of npu tensors and the kernels read and write them in place. Buffers the wrapper
allocates come from the npu caching allocator (``empty_strided`` on the npu device), so memory
statistics, OOM and the timeline see a compiled step as they see an eager one. Matrix
products, convolutions and other extern kernels stay npu operators, priced as in eager mode.

``TORCHINDUCTOR_NPU_BACKEND`` (contract §5) chooses torch_npu's kernel generator (Triton, MLIR,
DVM, AscendC); npusim has one, the C++ generator, serves it for every known value and says
so once. ``NPU_INDUCTOR_FALLBACK_LIST`` names aten operators that must stay eager operators
(not lowered into fused kernels); npusim honours it.
"""

from __future__ import annotations

import os
import warnings
from textwrap import dedent

import torch

_REGISTERED = False
# torch_npu's names for its Inductor kernel generators; npusim generates C++ for all of them.
_KNOWN_NPU_BACKENDS = ("cpp", "triton", "mlir", "dvm", "ascendc", "default", "")


def selected_backend() -> str:
    """The value of ``TORCHINDUCTOR_NPU_BACKEND`` (``cpp`` when unset); warns once when it
    names a generator npusim replaces by its C++ one."""
    value = os.environ.get("TORCHINDUCTOR_NPU_BACKEND", "").strip().lower()
    if value not in _KNOWN_NPU_BACKENDS:
        raise RuntimeError(
            f"TORCHINDUCTOR_NPU_BACKEND={value!r} is not a known npu Inductor backend; "
            "expected one of triton, mlir, dvm, ascendc, cpp."
        )
    if value not in ("cpp", "default", ""):
        warnings.warn(
            f"npusim: TORCHINDUCTOR_NPU_BACKEND={value} selects a device kernel generator of "
            "torch_npu; npusim compiles npu graphs with Inductor's C++ generator instead (the same "
            "fusion decisions; the kernels run on the simulated device memory).",
            stacklevel=2,
        )
    return value or "cpp"


def fallback_operators() -> list[str]:
    """The aten operators named by ``NPU_INDUCTOR_FALLBACK_LIST`` (comma separated)."""
    raw = os.environ.get("NPU_INDUCTOR_FALLBACK_LIST", "")
    return [name.strip() for name in raw.split(",") if name.strip()]


def _apply_fallback_list() -> None:
    from torch._inductor import lowering

    for name in fallback_operators():
        # "aten.gelu", "gelu", "aten::gelu", "aten.gelu.default" all name the packet aten.gelu.
        short = name.removeprefix("torch.ops.").removeprefix("aten::").removeprefix("aten.").split(".")[0]
        packet = getattr(torch.ops.aten, short, None) if short else None
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            raise RuntimeError(f"NPU_INDUCTOR_FALLBACK_LIST names {name!r}, which is not an aten operator")
        lowering.make_fallback(packet, warn=False, override_decomp=True)


def _op_overrides_class():
    from torch._inductor.codegen.common import DeviceOpOverrides

    class NpuDeviceOpOverrides(DeviceOpOverrides):
        """What the Python wrapper writes for device, stream and sync calls on npu."""

        def import_get_raw_stream_as(self, name: str) -> str:
            return dedent(
                f"""
                def {name}(index):
                    return torch.npu.current_stream(index).stream_id
                """
            )

        def set_device(self, device_idx: int) -> str:
            return f"torch.npu.set_device({device_idx})"

        def synchronize(self) -> str:
            return "torch.npu.synchronize()"

        def device_guard(self, device_idx: int) -> str:
            return f"torch.npu.device({device_idx})"

        def current_stream(self) -> str:
            return "torch.npu.current_stream()"

        def cpp_kernel_type(self) -> str:
            return "void*"

    return NpuDeviceOpOverrides


def _static_traffic(reads: list[str], writes: list[str]) -> tuple[int, int, int] | None:
    """(bytes read, bytes written, largest element count) of a kernel's buffers when every
    size is a number at compile time; None with dynamic shapes (then counted at run time)."""
    from torch._inductor.virtualized import V

    totals = [0, 0]
    elements = 0
    for index, names in enumerate((reads, writes)):
        for name in names:
            try:
                buffer = V.graph.get_buffer(name)
                numel = int(buffer.get_numel())
                itemsize = buffer.get_dtype().itemsize
            except (AttributeError, TypeError, KeyError):
                return None
            totals[index] += numel * itemsize
            elements = max(elements, numel)
    return totals[0], totals[1], elements


def _wrapper_class():
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    class NpuPythonWrapperCodegen(PythonWrapperCodegen):
        """The Python wrapper of a compiled npu graph.

        Each call of a generated C++ kernel is followed by its charge on the simulated timeline
        as one fused-kernel launch with the bytes it moves (npusim.compile.kernel_launch).
        """

        @staticmethod
        def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
            if is_subgraph:
                from torch._inductor.codegen.wrapper import SubgraphPythonWrapperCodegen

                return SubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
            return NpuPythonWrapperCodegen()

        def write_header(self) -> None:
            super().write_header()
            self.imports.splice(
                "from npusim.compile.kernel_launch import npu_kernel_launcher, npu_launch_counted\n"
                "from npusim._C import _empty_strided_npu as empty_strided_npu\n"
                "npu_device = torch.device('npu')",
                strip=True,
            )

        def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False):
            from torch._inductor import config

            if device.type != "npu" or is_pinned or config.test_configs.track_memory_lifecycle:
                line = super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
                # A device object is parsed faster than its name.
                return line.replace("device='npu'", "device=npu_device")
            # As Inductor's empty_strided_cpu / empty_strided_cuda: a C++ entry point without the
            # argument parser and the dispatcher, on each of a step's allocations.
            if allocation_shape is None:
                allocation_shape = shape
            shape_tuple = self.codegen_python_shape_tuple(shape)
            allocation_tuple = self.codegen_python_shape_tuple(allocation_shape)
            stride_tuple = self.codegen_python_shape_tuple(stride)
            line = f"{name} = empty_strided_npu({allocation_tuple}, {stride_tuple}, {dtype})"
            if shape_tuple != allocation_tuple:
                line += f".as_strided({shape_tuple}, {stride_tuple})"
            return line

        def _kernel_launcher(self, device_index: int, kernel_name: str, traffic: tuple[int, int, int]) -> str:
            """The module-level name of the launcher of one kernel (defined once)."""
            launcher = f"launch_{kernel_name}"
            defined = self.__dict__.setdefault("_npusim_launchers", set())
            if launcher not in defined:
                defined.add(launcher)
                read_bytes, written_bytes, elements = traffic
                self.header.writeline(
                    f"{launcher} = npu_kernel_launcher({device_index}, {kernel_name!r}, {read_bytes}, "
                    f"{written_bytes}, {elements})"
                )
            return launcher

        def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True,
                                         arg_types=None, **kwargs):
            from torch._inductor.virtualized import V

            device = device or V.graph.get_current_device_or_throw()
            if device.type != "npu" or triton:
                return super()._generate_kernel_call_helper(
                    kernel_name, call_args, device=device, triton=triton, arg_types=arg_types, **kwargs
                )
            # C++ kernels take raw pointers: const ones are read, the others written. Inductor
            # lists in-place buffers first, then inputs (const), then outputs, so the written
            # pointers before the first const one are read as well.
            reads, writes = [], []
            seen_input = False
            pointers = [(n, str(k)) for n, k in zip(call_args, arg_types or [""] * len(call_args))]
            has_inputs = any(k.endswith("*") and k.startswith("const") for _, k in pointers)
            for name, kind in pointers:
                if not kind.endswith("*"):
                    continue
                if kind.startswith("const"):
                    seen_input = True
                    reads.append(name)
                else:
                    writes.append(name)
                    if has_inputs and not seen_input:
                        reads.append(name)
            # One call launches the kernel (not in estimate-only mode, where buffers have shapes
            # but no data), charges it, and records it into an NPUGraph capture in progress.
            arguments = "(" + "".join(f"{a}, " for a in call_args) + ")"
            static = _static_traffic(reads, writes)
            if static is not None:
                # Static shapes: the bytes are known now; the launch only charges them.
                launcher = self._kernel_launcher(device.index or 0, kernel_name, static)
                self.writeline(f"{launcher}({kernel_name}, {arguments})")
            else:
                read_args = "".join(f"{a}, " for a in reads)
                write_args = "".join(f"{a}, " for a in writes)
                self.writeline(
                    f"npu_launch_counted({kernel_name}, {arguments}, {kernel_name!r}, ({read_args}), ({write_args}))"
                )

    return NpuPythonWrapperCodegen


def _cache_key_pass():
    """A no-op graph pass whose id is the hash of npusim's code generation files: Inductor
    puts custom device passes in its FX-graph cache key, so a cached wrapper written by an
    older npusim is never reused."""
    from torch._inductor.custom_graph_pass import CustomGraphModulePass, get_hash_for_files

    here = os.path.dirname(os.path.abspath(__file__))
    files = tuple(
        os.path.join(here, name)
        for name in ("inductor_backend.py", "inductor_streams.py", "kernel_launch.py", "_native.py")
    )

    class NpusimCodegenVersion(CustomGraphModulePass):
        def __call__(self, graph_module) -> None:
            return None

        def uuid(self):
            return get_hash_for_files(files)

    return NpusimCodegenVersion()


def codegen_class(name: str):
    """The class Inductor's PrivateUse1 lookup asks the device module for."""
    from torch._inductor.codegen.common import get_scheduling_for_device, get_wrapper_codegen_for_device

    if name == "Scheduling":
        return get_scheduling_for_device("npu")
    if name == "PythonWrapperCodegen":
        return get_wrapper_codegen_for_device("npu")
    if name == "CppWrapperCodegen":
        return get_wrapper_codegen_for_device("npu", cpp_wrapper=True)
    if name == "WrapperFxCodegen":
        return None
    raise AttributeError(name)


def _schedule_npu_nodes_as_cpu() -> None:
    """The scheduler asks ``node.is_cpu()`` before steps written for Triton's SIMD kernels
    (loop reindexing after fusion, some fusion scores); npu nodes get C++ kernels, so they
    must take the CPU path there. Out-of-tree devices patch this until PyTorch's device
    hard-coding is gone (RFC #189138)."""
    from torch._inductor.scheduler import BaseSchedulerNode

    if getattr(BaseSchedulerNode.is_cpu, "_npusim", False):
        return
    original = BaseSchedulerNode.is_cpu

    def is_cpu(self) -> bool:
        device = self.get_device()
        return original(self) or (device is not None and device.type == "npu")

    is_cpu._npusim = True
    BaseSchedulerNode.is_cpu = is_cpu


def _npu_buffers_follow_cpu_heuristics() -> None:
    """Inductor decides per device whether to store an intermediate or recompute it in each
    consumer (``ir.is_cpu`` in the realize heuristics: reused results of exp/log/tanh, and the
    read and op-count limits). GPU values favour recomputation, which Triton kernels hide; npu
    kernels are C++ loops on the host, where the CPU values hold: recomputing softmax's exp in
    two loops made the attention kernels of a GPT step a third slower than CPU Inductor's."""
    from torch._inductor import ir

    if getattr(ir.is_cpu, "_npusim", False):
        return
    original = ir.is_cpu

    def is_cpu(x) -> bool:
        return original(x) or ir.get_device_type(x) == "npu"

    is_cpu._npusim = True
    ir.is_cpu = is_cpu


def _npu_variance_as_on_cpu() -> None:
    """``var_mean`` (layer norm) is lowered to a two-pass sum for the reduction sizes where the
    C++ backend finds it faster than Welford (``config.cpp.use_two_step_variance_threshold``);
    Inductor applies that limit to ``cpu`` only and gives npu the GPU one, so npu layer norms
    ran Welford loops where CPU Inductor runs two plain sums."""
    from torch._inductor import config, lowering

    if getattr(lowering.use_two_step_variance, "_npusim", False):
        return
    original = lowering.use_two_step_variance

    def use_two_step_variance(x, axis, keepdim, input_dtype) -> bool:
        device = x.get_device()
        if device is None or device.type != "npu":
            return original(x, axis, keepdim, input_dtype)
        import sympy

        axis = lowering._validate_reduction_axis(x, axis)
        kwargs = lowering._make_reduction_inner(x, axis=axis, keepdims=keepdim, dtype=None, override_return_dtype=None)
        reduction_numel = lowering.sympy_product(kwargs["reduction_ranges"])
        if not isinstance(reduction_numel, sympy.Integer):
            return False
        return not (
            int(reduction_numel) > config.cpp.use_two_step_variance_threshold
            or lowering.sympy_product(kwargs["ranges"]) == 1
        )

    use_two_step_variance._npusim = True
    lowering.use_two_step_variance = use_two_step_variance


def _npu_kernels_use_cpu_backend() -> None:
    """``get_current_backend()`` names the kernel language of a device ("cpp" for CPU,
    "triton" for every device it does not know); code generation and dtype propagation branch
    on it, so for npu it must say what npu kernels are: CPU C++. Patched where it is bound."""
    import importlib

    from torch._inductor import config, utils

    if getattr(utils.get_current_backend, "_npusim", False):
        return
    original = utils.get_current_backend

    def get_current_backend(device_type: str | None = None) -> str:
        if not device_type:
            from torch._inductor.virtualized import V

            device_type = V.graph.get_current_device_or_throw().type
        if device_type == "npu":
            return config.cpu_backend
        return original(device_type)

    get_current_backend._npusim = True
    for name in ("torch._inductor.utils", "torch._inductor.codegen.common", "torch._inductor.scheduler",
                 "torch._inductor.kernel.mm_common"):
        module = importlib.import_module(name)
        if hasattr(module, "get_current_backend"):
            module.get_current_backend = get_current_backend


def register() -> None:
    """Register the npu device with Inductor; idempotent, run at the first Inductor compile."""
    global _REGISTERED
    if _REGISTERED:
        return
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    selected_backend()
    register_backend_for_device(
        "npu", CppScheduling, _wrapper_class(), CppWrapperCpu, device_custom_pass=_cache_key_pass()
    )
    register_device_op_overrides("npu", _op_overrides_class()())
    _schedule_npu_nodes_as_cpu()
    _npu_buffers_follow_cpu_heuristics()
    _npu_variance_as_on_cpu()
    _npu_kernels_use_cpu_backend()
    _apply_fallback_list()
    from npusim.compile import inductor_streams, npu_graph_trees

    inductor_streams.install()
    npu_graph_trees.install()
    _REGISTERED = True
