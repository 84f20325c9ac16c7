"""Operator conformance of the npu device against PyTorch's CPU kernels, over PyTorch's OpInfo database.

npusim runs every aten operator on ``npu`` as the CPU kernel working on device memory, so for each
OpInfo and each of its sample inputs the npu result must equal the CPU result bit for bit (NaN
payloads and signed zeros included), with the same dtype, shape, strides and math bits, on the
npu device. Random operators are compared after seeding both runs identically
(``torch.manual_seed`` seeds the npu generators too); operators whose output is uninitialized
memory are compared on metadata only. Every skip carries a written reason (see SKIPPED_OPS,
SAMPLE_SKIPS and the SKIP_* texts).

Library use (the pytest subset does this)::

    report = check_op(op, OpCheckConfig(limit_samples=8))

Script use::

    python tests/conformance/opinfo_conformance.py [--ops name,...] [--limit-samples N] [--json out.json]

The script runs the operators in a worker subprocess by default, so that a crash or a hang is
recorded as the failure of the sample at fault and the sweep goes on after it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

REPOSITORY = Path(__file__).resolve().parents[2]

try:  # an installed npusim wins; else the checkout's python/ folder
    import npusim  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPOSITORY / "python"))
    import npusim  # noqa: F401

import contextlib

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

DEVICE = "npu"


@contextlib.contextmanager
def _without_hf32():
    """The CPU has no HF32, and torch_npu's default (torch.npu.conv.allow_hf32 = True) rounds the
    fp32 operands of convolutions as the chip does; the bit-for-bit comparison turns that off while
    it checks an operator, as PyTorch's own CUDA tests turn TF32 off, and restores it after (at
    import it would change the switch for every test collected with this module)."""
    previous = torch.npu.conv.allow_hf32
    torch.npu.conv.allow_hf32 = False
    try:
        yield
    finally:
        torch.npu.conv.allow_hf32 = previous

# float32 is the reference floating dtype; the integer and bool dtypes are checked where the op
# supports them. (float64/float16/complex inputs would multiply the runtime for little extra
# coverage of the executor, which is dtype-agnostic.)
FORWARD_DTYPES = (torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool)
GRAD_DTYPE = torch.float32

# Every op call is preceded by torch.manual_seed(CALL_SEED) on both devices, so random operators
# (bernoulli, normal, rand*, multinomial, dropout, ...) draw the same numbers; for deterministic
# operators the reseeding is harmless. Reseeding every call also covers random operators that
# OpInfo does not flag as such (rrelu, feature_alpha_dropout, ...).
CALL_SEED = 20240611
SAMPLE_SEED = 0  # seeds sample generation, so a sample list is reproducible
COTANGENT_SEED = 7  # a private generator draws the backward cotangents

# ---------------------------------------------------------------------------------------------
# Skips and partial checks. Every entry says why npu cannot, or need not, match CPU.
# ---------------------------------------------------------------------------------------------

# Whole OpInfos (by full_name, or by name for all variants) that are not compared.
SKIPPED_OPS: dict[str, str] = {}

# OpInfos whose output values are uninitialized memory: only metadata (dtype, shape, strides,
# device) is compared. Matched by OpInfo name.
UNINITIALIZED_OUTPUT_OPS: dict[str, str] = {
    name: "output is uninitialized memory (torch.empty semantics): only metadata is compared"
    for name in ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided")
}

SKIP_NON_STRIDED = (
    "sparse/non-strided layout in the sample or the CPU result: npu tensors are strided only, "
    "as in torch_npu (npusim rejects other layouts by design)"
)
SKIP_FLOAT64_CAST = (
    "torch_npu parity: .to(float64) of an npu tensor gives float32 (torch_npu's _to_copy replaces "
    "Double with Float; npusim's dtype table, contract 6.3), so an op that converts to float64 "
    "internally (float_power, softmax(dtype=float64), .double(), .to) returns float32 on npu"
)
SKIP_NO_GRADIENT = "grad: the sample has no differentiable float output or no input requiring grad"
SKIP_LSTSQ_GELSY = (
    "linalg.lstsq with the gelsy driver (the CPU default): PyTorch passes LAPACK ?gelsy an "
    "uninitialized jpvt array (at::empty in apply_lstsq), which ?gelsy reads as input, so the "
    "result depends on leftover memory contents and differs from run to run on npu's caching "
    "allocator"
)


def _lstsq_uses_gelsy(sample: SampleInput) -> bool:
    return sample.kwargs.get("driver") in (None, "gelsy")


# Per-sample skips: (OpInfo name, predicate on the CPU sample, reason).
SAMPLE_SKIPS: list[tuple[str, Callable[[SampleInput], bool], str]] = [
    ("linalg.lstsq", _lstsq_uses_gelsy, SKIP_LSTSQ_GELSY),
]


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SampleOutcome:
    """What one sample gave: passed, failed or skipped, and why."""

    seq: int  # position among all samples of the op (forward dtypes in order, then grad)
    dtype: str
    mode: str  # "forward" or "grad"
    index: int  # position in op.sample_inputs(...) for this dtype and mode
    status: str  # "passed", "failed" or "skipped"
    detail: str = ""  # failure text or skip reason
    sample: str = ""  # a short description of the sample (failures only)
    errors_matched: bool = False  # passed because CPU and npu raised the same exception type


@dataclasses.dataclass
class OpReport:
    op: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors_matched: int = 0
    crashes: int = 0
    abandoned: bool = False  # crashed too often: the samples after the last crash were not run
    seconds: float = 0.0
    skip_reasons: dict[str, int] = dataclasses.field(default_factory=dict)
    failures: list[dict] = dataclasses.field(default_factory=list)

    @property
    def first_error(self) -> str | None:
        return self.failures[0]["detail"] if self.failures else None

    def add(self, outcome: SampleOutcome) -> None:
        if outcome.status == "passed":
            self.passed += 1
            self.errors_matched += outcome.errors_matched
        elif outcome.status == "skipped":
            self.skipped += 1
            self.skip_reasons[outcome.detail] = self.skip_reasons.get(outcome.detail, 0) + 1
        else:
            self.failed += 1
            self.failures.append(dataclasses.asdict(outcome))

    def to_json(self, max_failures: int = 50) -> dict:
        data = dataclasses.asdict(self)
        data["failures"] = data["failures"][:max_failures]
        data["first_error"] = self.first_error
        return data


@dataclasses.dataclass
class OpCheckConfig:
    dtypes: tuple[torch.dtype, ...] = FORWARD_DTYPES
    check_grads: bool = True
    limit_samples: int | None = None  # per (op, dtype, mode)


class Mismatch(AssertionError):
    """The npu result differs from the CPU result."""


# Operators whose npu backward is another ATen operator than the CPU's, with its own gradient
# layout: gradients are compared by value, their strides are those of the npu operator's Meta
# function (what torch.compile traces with; tests/compile/test_attention_fake_kernels.py checks
# them against it).
OWN_GRADIENT_LAYOUT_OPS = {
    "nn.functional.scaled_dot_product_attention": (
        "SDPA's fused npu kernel (_scaled_dot_product_fused_attention_overrideable_backward) lays its "
        "gradients out like their inputs, as its Meta function does; the CPU's flash backward lays "
        "them out (B, L, H, E)"
    ),
}


class Float64Cast(Mismatch):
    """CPU gave float64 where npu gave float32: the deliberate torch_npu cast (SKIP_FLOAT64_CAST)."""


class SampleSkip(Exception):
    """Raised by the CPU run when the sample cannot be compared; the message is the reason."""


# ---------------------------------------------------------------------------------------------
# Selecting operators
# ---------------------------------------------------------------------------------------------


def op_key(op: OpInfo) -> str:
    return op.full_name


def select_ops(names: Iterable[str] | None) -> list[OpInfo]:
    """OpInfos whose full_name or name is in ``names`` (all of op_db when None or empty)."""
    wanted = {n.strip() for n in names or () if n.strip()}
    if not wanted:
        return list(op_db)
    chosen = [op for op in op_db if op.full_name in wanted or op.name in wanted]
    unknown = wanted - {op.full_name for op in chosen} - {op.name for op in chosen}
    if unknown:
        raise KeyError(f"no OpInfo named {sorted(unknown)}")
    return chosen


def op_skip_reason(op: OpInfo) -> str | None:
    return SKIPPED_OPS.get(op.full_name) or SKIPPED_OPS.get(op.name)


def sample_skip_reason(op: OpInfo, sample: SampleInput) -> str | None:
    if has_non_strided_tensor((sample.input, sample.args, sample.kwargs)):
        return SKIP_NON_STRIDED
    for name, applies, reason in SAMPLE_SKIPS:
        if op.name == name and applies(sample):
            return reason
    return None


def forward_dtypes(op: OpInfo, wanted: Iterable[torch.dtype]) -> list[torch.dtype]:
    supported = op.supported_dtypes("cpu")
    return [d for d in wanted if d in supported]


def checks_grads(op: OpInfo) -> bool:
    return op.supports_autograd and GRAD_DTYPE in op.supported_backward_dtypes("cpu")


# ---------------------------------------------------------------------------------------------
# Sample structure: the leaves (tensors and device arguments) of a sample, in a fixed order
# ---------------------------------------------------------------------------------------------


def is_device_leaf(value: Any) -> bool:
    return isinstance(value, torch.device) or value in ("cpu", "meta", DEVICE)


def leaves(value: Any) -> Iterator[Any]:
    """Tensors and device arguments of a nested structure, in the order DeviceCopier visits them."""
    if isinstance(value, torch.Tensor) or (isinstance(value, str) and is_device_leaf(value)) \
            or isinstance(value, torch.device):
        yield value
    elif isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        for v in value:
            yield from leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)


def sample_leaves(sample: SampleInput) -> list[Any]:
    return list(leaves((sample.input, sample.args, sample.kwargs)))


def sample_tensors(sample: SampleInput) -> list[torch.Tensor]:
    return tensors_in((sample.input, sample.args, sample.kwargs))


def tensors_in(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in leaves(value) if isinstance(leaf, torch.Tensor)]


def has_non_strided_tensor(value: Any) -> bool:
    return any(t.layout != torch.strided for t in tensors_in(value))


def leaf_device_type(leaf: Any) -> str:
    if isinstance(leaf, torch.Tensor):
        return leaf.device.type
    return torch.device(leaf).type


def host_resident_leaves(cpu_samples: list[SampleInput], probe_samples: list[SampleInput] | None) -> list[set[int]]:
    """For each sample, the leaves that stay on the host when the sample is made for a device.

    Some sample functions create a tensor on CPU whatever device they are asked for, because the
    operator wants it there (tensor_split's indices, CPU scalar tensors). The same samples made for
    the meta device show them: a leaf still on CPU there stays on CPU for the npu run too. When
    the probe cannot be made or its structure differs, every leaf moves.
    """
    if probe_samples is None or len(probe_samples) != len(cpu_samples):
        return [set() for _ in cpu_samples]
    result = []
    for cpu_sample, probe in zip(cpu_samples, probe_samples):
        cpu_leaves, probe_leaves = sample_leaves(cpu_sample), sample_leaves(probe)
        if len(cpu_leaves) != len(probe_leaves):
            result.append(set())
            continue
        result.append({i for i, leaf in enumerate(probe_leaves) if leaf_device_type(leaf) == "cpu"})
    return result


# ---------------------------------------------------------------------------------------------
# Moving samples between devices
# ---------------------------------------------------------------------------------------------


class DeviceCopier:
    """Copies the leaves of a nested structure to a device, keeping each tensor's exact layout.

    A plain ``.to(device)`` makes non-dense tensors contiguous, and a different layout can change
    a CPU kernel's arithmetic order (hence its last bits) or its output strides. So each distinct
    storage is copied byte for byte and every tensor is rebuilt on it with its original offset,
    sizes and strides; tensors sharing a storage keep sharing it, and the same tensor object maps
    to the same copy. Copies are fresh leaves (``requires_grad`` as in the sample). CPU device
    arguments (factory ``device=`` keywords) become the target device. Leaves whose position is in
    ``keep_on_host`` are copied but stay on CPU.
    """

    def __init__(self, device: str, keep_on_host: set[int] = frozenset()):
        self.device = torch.device(device)
        self.keep_on_host = keep_on_host
        self.moved_tensor = False  # whether a tensor went to the device
        self.device_arguments: list[torch.device] = []  # device arguments, as passed to the op
        self._position = 0
        self._tensors: dict[int, torch.Tensor] = {}
        self._storages: dict[tuple[str, int], torch.UntypedStorage] = {}

    def sample(self, sample: SampleInput) -> SampleInput:
        return SampleInput(
            self(sample.input),
            args=self(sample.args),
            kwargs=self(sample.kwargs),
            output_process_fn_grad=sample.output_process_fn_grad,
            broadcasts_input=sample.broadcasts_input,
            name=sample.name,
        )

    def __call__(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor) or isinstance(value, torch.device) or (
                isinstance(value, str) and is_device_leaf(value)):
            return self._leaf(value)
        if isinstance(value, torch.Size):
            return value
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
            return type(value)(*(self(v) for v in value))
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value

    def _leaf(self, value: Any) -> Any:
        target = torch.device("cpu") if self._position in self.keep_on_host else self.device
        self._position += 1
        if isinstance(value, torch.Tensor):
            self.moved_tensor |= target.type != "cpu"
            return self._tensor(value, target)
        if leaf_device_type(value) == "cpu":
            value = target if isinstance(value, torch.device) else target.type
        self.device_arguments.append(torch.device(value))
        return value

    def output_device(self) -> torch.device | None:
        """Where the op's new tensors belong: an explicit device argument wins (factories,
        ``empty_like(x, device='cpu')``), else npu when a tensor went there; None: where CPU put them."""
        if self.device_arguments:
            device = self.device_arguments[0]
        elif self.moved_tensor:
            device = self.device
        else:
            return None
        if device.type == DEVICE and device.index is None:
            device = torch.device(DEVICE, 0)
        return device

    def _tensor(self, t: torch.Tensor, target: torch.device) -> torch.Tensor:
        if id(t) in self._tensors:
            return self._tensors[id(t)]
        if t.layout != torch.strided or type(t) not in (torch.Tensor, torch.nn.Parameter):
            copy = t.detach().to(target)  # no plain storage to rebuild from (skipped samples only)
        else:
            storage = self._storage(t, target)
            with torch.no_grad():
                copy = torch.empty(0, dtype=t.dtype, device=target)
                copy.set_(storage, t.storage_offset(), t.size(), t.stride())
                if t.is_conj():
                    copy = copy.conj()
                if t.is_neg():
                    copy = copy._neg_view()
        if t.requires_grad:
            copy.requires_grad_(True)
        self._tensors[id(t)] = copy
        return copy

    def _storage(self, t: torch.Tensor, target: torch.device) -> torch.UntypedStorage:
        source = t.untyped_storage()
        key = (target.type, source.data_ptr())
        if key[1] and key in self._storages:
            return self._storages[key]
        raw = torch.empty(0, dtype=torch.uint8).set_(source)  # the storage's bytes as a tensor
        copy = raw.detach().to(target, copy=True).untyped_storage()
        if key[1]:  # empty storages (data pointer 0) are never shared
            self._storages[key] = copy
        return copy


# ---------------------------------------------------------------------------------------------
# Comparing results
# ---------------------------------------------------------------------------------------------

_BIT_VIEWS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def physical(t: torch.Tensor) -> torch.Tensor:
    """``t`` without its conjugate/negative bits: the memory as stored, no copy.

    Comparing the stored memory plus the bits is exact, and avoids materializing a math-bit view
    through the backend's copy path, which is not what is under test here.
    """
    t = t.detach()
    if t.is_conj():
        t = t.conj()
    if t.is_neg():
        t = t._neg_view()
    return t


def bits(t: torch.Tensor) -> torch.Tensor:
    """``t``'s stored values on CPU, as integers, so that equality is bitwise (NaN payloads, -0.0)."""
    if t._is_zerotensor():
        t = torch.zeros(t.shape, dtype=t.dtype)
    t = physical(t).cpu()
    if t.dtype == torch.bool:
        return t
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.view(_BIT_VIEWS[t.element_size()])


def compare_tensors(expected: torch.Tensor, actual: Any, where: str, values: bool, want_device: torch.device,
                    grad_strides: bool = True) -> None:
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{where}: CPU gave a tensor, npu gave {type(actual).__name__}")
    checks = (
        ("device", want_device, actual.device),
        ("dtype", expected.dtype, actual.dtype),
        ("layout", expected.layout, actual.layout),
        ("shape", tuple(expected.shape), tuple(actual.shape)),
        ("conjugate bit", expected.is_conj(), actual.is_conj()),
        ("negative bit", expected.is_neg(), actual.is_neg()),
    )
    for what, want, got in checks:
        if want != got:
            kind = Float64Cast if (what, want, got) == ("dtype", torch.float64, torch.float32) else Mismatch
            raise kind(f"{where}: {what} differs: expected {want}, npu gave {got}")
    if expected.layout != torch.strided:
        return
    if expected.stride() != actual.stride() and (grad_strides or "['grads']" not in where):
        raise Mismatch(f"{where}: strides differ: CPU {expected.stride()}, npu {actual.stride()}")
    if actual.numel() and actual.data_ptr() == 0 and not actual._is_zerotensor():
        raise Mismatch(f"{where}: npu tensor has no memory (null data pointer)"
                       + (" where CPU gave a ZeroTensor" if expected._is_zerotensor() else ""))
    if values and not torch.equal(bits(expected), bits(actual)):
        raise Mismatch(f"{where}: values differ: {describe_difference(expected, actual)}")


def describe_difference(expected: torch.Tensor, actual: torch.Tensor) -> str:
    """How many elements differ, and the first one."""
    e, a = bits(expected).reshape(-1), bits(actual).reshape(-1)
    differ = (e != a).nonzero().reshape(-1)
    first = int(differ[0])
    e_value = physical(expected).cpu().reshape(-1)[first].item() if not expected._is_zerotensor() else 0
    a_value = physical(actual).cpu().reshape(-1)[first].item()
    return f"{differ.numel()}/{e.numel()} elements, first at flat index {first}: CPU {e_value!r}, npu {a_value!r}"


def same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def compare_results(expected: Any, actual: Any, where: str, values: bool, device: torch.device | None,
                    grad_strides: bool = True) -> None:
    """Raise Mismatch unless ``actual`` (npu run) equals ``expected`` (CPU run).

    ``device``: where the npu run's tensors belong (see DeviceCopier.output_device); None: where
    CPU put them (a run with nothing on npu, e.g. ``arange(2)``, stays on CPU).
    """
    if isinstance(expected, torch.Tensor):
        want = device if device is not None and expected.device.type == "cpu" else expected.device
        compare_tensors(expected, actual, where, values, want, grad_strides)
    elif isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        if type(actual) is not type(expected) or len(actual) != len(expected):
            raise Mismatch(f"{where}: CPU gave {type(expected).__name__}[{len(expected)}], npu gave "
                           f"{type(actual).__name__}[{len(actual) if hasattr(actual, '__len__') else '-'}]")
        for i, (e, a) in enumerate(zip(expected, actual)):
            compare_results(e, a, f"{where}[{i}]", values, device, grad_strides)
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or expected.keys() != actual.keys():
            raise Mismatch(f"{where}: dict keys differ")
        for k in expected:
            compare_results(expected[k], actual[k], f"{where}[{k!r}]", values, device, grad_strides)
    elif not same_scalar(expected, actual):
        raise Mismatch(f"{where}: CPU {expected!r}, npu {actual!r}")


# ---------------------------------------------------------------------------------------------
# Running one sample
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One device's run of a sample: its (copied) inputs, and its result or exception."""

    sample: SampleInput
    output_device: torch.device | None  # see DeviceCopier.output_device
    input_devices: list[torch.device]  # where each input tensor was placed
    result: Any = None
    error: BaseException | None = None


def call_op(op: OpInfo, sample: SampleInput) -> Any:
    torch.manual_seed(CALL_SEED)  # random operators draw the same numbers on both devices
    return op(sample.input, *sample.args, **sample.kwargs)


def forward(op: OpInfo, sample: SampleInput) -> Any:
    result = call_op(op, sample)
    if has_non_strided_tensor(result):
        raise SampleSkip(SKIP_NON_STRIDED)
    return result


def backward(op: OpInfo, sample: SampleInput) -> dict[str, Any]:
    """The forward result and the input gradients of the op's differentiable outputs, for a
    fixed random cotangent. The forward result is compared first, so that a difference there
    (e.g. the float64 cast) is reported as the cause rather than the gradients it changes.

    The cotangent is drawn on CPU from a private generator (same values for both devices,
    independent of the global RNG) and copied to each output's device.
    """
    raw = forward(op, sample)
    outputs = sample.output_process_fn_grad(raw)
    differentiable = [t for t in tensors_in(outputs) if t.requires_grad and t.is_floating_point()]
    inputs = [t for t in sample_tensors(sample) if t.requires_grad]
    if not differentiable or not inputs:
        raise SampleSkip(SKIP_NO_GRADIENT)
    generator = torch.Generator().manual_seed(COTANGENT_SEED)
    cotangents = [torch.randn(t.shape, dtype=t.dtype, generator=generator).to(t.device) for t in differentiable]
    grads = list(torch.autograd.grad(differentiable, inputs, cotangents, allow_unused=True))
    return {"forward": raw, "grads": grads}


def run_on(device: str, op: OpInfo, sample: SampleInput, body: Callable[[OpInfo, SampleInput], Any],
           keep_on_host: set[int] = frozenset()) -> Run:
    copier = DeviceCopier(device, keep_on_host)
    copied = copier.sample(sample)
    run = Run(copied, copier.output_device(), [t.device for t in sample_tensors(copied)])
    try:
        run.result = body(op, run.sample)
    except Exception as error:  # noqa: BLE001 - any exception is a result to compare
        run.error = error
    return run


def error_text(error: BaseException) -> str:
    lines = str(error).strip().splitlines() or [""]
    return f"{type(error).__name__}: {lines[0][:400]}"


def compare_runs(cpu: Run, npu: Run, values: bool, grad_strides: bool = True) -> Mismatch | None:
    """None when the runs agree, else why not (a Mismatch). Both raising the same exception type agrees."""
    if cpu.error is not None or npu.error is not None:
        if cpu.error is None:
            return Mismatch(f"npu raised, CPU did not: {error_text(npu.error)}")
        if npu.error is None:
            return Mismatch(f"CPU raised, npu did not: {error_text(cpu.error)}")
        if type(cpu.error) is not type(npu.error):
            return Mismatch(f"different exceptions: CPU {error_text(cpu.error)} | npu {error_text(npu.error)}")
        return None
    try:
        compare_results(cpu.result, npu.result, "output", values, npu.output_device, grad_strides)
        # In-place and out= operators write their arguments: those must agree too.
        for i, (e, a, device) in enumerate(zip(sample_tensors(cpu.sample), sample_tensors(npu.sample),
                                               npu.input_devices)):
            compare_tensors(e, a, f"input tensor {i} after call", values, device)
    except Mismatch as mismatch:
        return mismatch
    return None


def describe_sample(sample: SampleInput) -> str:
    def brief(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            if v.layout != torch.strided:
                return f"Tensor{list(v.shape)} {v.layout}"
            layout = "" if v.is_contiguous() else f" stride={v.stride()}"
            return f"Tensor{list(v.shape)}{layout}"
        if isinstance(v, (list, tuple)) and not isinstance(v, torch.Size):
            inner = ", ".join(brief(x) for x in v[:6])
            return f"[{inner}{', ...' if len(v) > 6 else ''}]"
        return repr(v)[:60]

    parts = [brief(sample.input)] + [brief(a) for a in sample.args]
    parts += [f"{k}={brief(v)}" for k, v in sample.kwargs.items()]
    return (f"{sample.name}: " if sample.name else "") + "(" + ", ".join(parts) + ")"


def check_sample(op: OpInfo, sample: SampleInput, mode: str, keep_on_host: set[int]) -> tuple[str, str, bool]:
    """Run one sample on both devices: (status, failure text or skip reason, errors matched)."""
    reason = sample_skip_reason(op, sample)
    if reason is not None:
        return "skipped", reason, False
    body = forward if mode == "forward" else backward
    cpu = run_on("cpu", op, sample, body)
    if isinstance(cpu.error, SampleSkip):
        return "skipped", str(cpu.error), False
    npu = run_on(DEVICE, op, sample, body, keep_on_host)
    failure = compare_runs(cpu, npu, values=op.name not in UNINITIALIZED_OUTPUT_OPS,
                           grad_strides=op.name not in OWN_GRADIENT_LAYOUT_OPS)
    if isinstance(failure, Float64Cast):
        return "skipped", SKIP_FLOAT64_CAST, False
    if failure is not None:
        return "failed", str(failure), False
    return "passed", "", cpu.error is not None


# ---------------------------------------------------------------------------------------------
# Checking one operator
# ---------------------------------------------------------------------------------------------


def make_samples(op: OpInfo, device: str, dtype: torch.dtype, requires_grad: bool,
                 limit: int | None) -> list[SampleInput]:
    torch.manual_seed(SAMPLE_SEED)  # the same sample list every time
    return list(islice(op.sample_inputs(device, dtype, requires_grad=requires_grad), limit))


def probe_samples(op: OpInfo, dtype: torch.dtype, requires_grad: bool, limit: int | None) -> list[SampleInput] | None:
    """The samples made for the meta device (see host_resident_leaves); None when that fails."""
    try:
        return make_samples(op, "meta", dtype, requires_grad, limit)
    except Exception:  # noqa: BLE001 - many sample functions read values (.item()), not possible on meta
        return None


def sample_plan(op: OpInfo, config: OpCheckConfig) -> Iterator[tuple[torch.dtype, str]]:
    """The (dtype, mode) groups of an op, in the order their samples are numbered."""
    for dtype in forward_dtypes(op, config.dtypes):
        yield dtype, "forward"
    if config.check_grads and checks_grads(op):
        yield GRAD_DTYPE, "grad"


def check_op(op: OpInfo, config: OpCheckConfig | None = None, *, resume_after: int = -1,
             on_event: Callable[[dict], None] | None = None) -> OpReport:
    with _without_hf32():
        return _check_op(op, config, resume_after=resume_after, on_event=on_event)


def _check_op(op: OpInfo, config: OpCheckConfig | None = None, *, resume_after: int = -1,
              on_event: Callable[[dict], None] | None = None) -> OpReport:
    """Compare the samples of ``op`` on CPU and npu (forward for each dtype; float32 grads).

    ``resume_after``: skip the samples numbered up to this one (a supervisor restarting after a
    crash). ``on_event`` receives {"event": "sample", "seq"} before and {"event": "outcome", ...}
    after each sample, so that a supervisor can tell which sample a crash happened in.
    """
    config = config or OpCheckConfig()
    emit = on_event or (lambda event: None)
    report = OpReport(op_key(op))
    start = time.perf_counter()
    reason = op_skip_reason(op)
    if reason is not None:
        report.add(SampleOutcome(0, "-", "-", -1, "skipped", reason))
        return report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation and fallback warnings would drown the report
        for group, (dtype, mode) in enumerate(sample_plan(op, config)):
            for outcome in run_group(op, dtype, mode, config, group * GROUP_STRIDE, resume_after, emit):
                report.add(outcome)
                emit({"event": "outcome", "outcome": dataclasses.asdict(outcome)})
    report.seconds = round(time.perf_counter() - start, 3)
    return report


# Samples are numbered group * GROUP_STRIDE + index (a group is one dtype and mode), so numbers are
# stable whatever was skipped, and ordered as they run.
GROUP_STRIDE = 1_000_000


def run_group(op: OpInfo, dtype: torch.dtype, mode: str, config: OpCheckConfig, first_seq: int,
              resume_after: int, emit: Callable[[dict], None]) -> Iterator[SampleOutcome]:
    """Outcomes of the samples of one (dtype, mode), numbered from ``first_seq``."""
    dtype_name = str(dtype).removeprefix("torch.")
    if first_seq + GROUP_STRIDE - 1 <= resume_after:
        return  # a resumed worker: this whole group ran before the crash
    try:
        samples = make_samples(op, "cpu", dtype, mode == "grad", config.limit_samples)
    except Exception as error:  # noqa: BLE001 - the OpInfo itself fails on CPU: nothing to compare
        yield SampleOutcome(first_seq, dtype_name, mode, -1, "skipped",
                            f"sample generation failed on CPU: {error_text(error)[:120]}")
        return
    host = host_resident_leaves(samples, probe_samples(op, dtype, mode == "grad", config.limit_samples))
    for index, sample in enumerate(samples):
        seq = first_seq + index
        if seq <= resume_after:
            continue
        emit({"event": "sample", "seq": seq})
        status, detail, matched = check_sample(op, sample, mode, host[index])
        yield SampleOutcome(seq, dtype_name, mode, index, status, detail,
                            describe_sample(sample) if status == "failed" else "", matched)


# ---------------------------------------------------------------------------------------------
# Sweeps: in-process, or supervised in worker subprocesses
# ---------------------------------------------------------------------------------------------


def run_in_process(ops: list[OpInfo], config: OpCheckConfig, emit: Callable[[dict], None],
                   resume: dict[str, int] | None = None) -> None:
    """Check ``ops`` here, announcing each op's start, samples and end through ``emit``."""
    for op in ops:
        emit({"event": "start", "op": op_key(op)})
        seconds = 0.0
        try:
            seconds = check_op(op, config, resume_after=(resume or {}).get(op_key(op), -1), on_event=emit).seconds
        except Exception:  # noqa: BLE001 - a harness bug must not end the sweep
            emit({"event": "harness_error", "text": traceback.format_exc(limit=4)[-800:]})
        emit({"event": "done", "op": op_key(op), "seconds": seconds})


@dataclasses.dataclass
class Supervision:
    """State of a supervised sweep: reports so far and where each op's worker got to."""

    config: OpCheckConfig
    op_timeout: float
    max_crashes: int
    progress: bool
    total: int
    reports: dict[str, OpReport] = dataclasses.field(default_factory=dict)
    pending: list[str] = dataclasses.field(default_factory=list)
    resume: dict[str, int] = dataclasses.field(default_factory=dict)


def run_supervised(ops: list[OpInfo], config: OpCheckConfig, op_timeout: float = 900.0, max_crashes: int = 8,
                   progress: bool = True) -> list[OpReport]:
    """Check ``ops`` in worker subprocesses; a crash or a hang fails only the sample at fault.

    The worker appends JSON lines to a file: op start, sample start, sample outcome, op done.
    When it dies, or a sample runs past ``op_timeout`` seconds, the sample it had started is
    recorded as failed and a new worker resumes after it. An op that crashes ``max_crashes``
    times is abandoned (its remaining samples are not run; the report says so).
    """
    state = Supervision(config, op_timeout, max_crashes, progress, len(ops), pending=[op_key(op) for op in ops])
    failures_outside_ops = 0
    while state.pending:
        try:
            run_worker(state)
        except WorkerStartError:
            # A worker that fails before any op (e.g. the extension being rebuilt under us) is
            # retried a few times before the sweep gives up.
            failures_outside_ops += 1
            if failures_outside_ops >= 3:
                raise
            time.sleep(30)
    return [state.reports[op_key(op)] for op in ops]


class WorkerStartError(RuntimeError):
    """The worker failed outside any operator."""


def run_worker(state: Supervision) -> None:
    """Run one worker over the pending ops until it finishes, crashes or hangs."""
    with tempfile.NamedTemporaryFile("w+", suffix=".jsonl", delete=False) as log:
        log_path = log.name
    # stderr goes to a file, not a pipe: a pipe nobody reads until the end would block a chatty worker.
    stderr_file = tempfile.TemporaryFile("w+")
    resume = ",".join(f"{k}={v}" for k, v in state.resume.items() if k in state.pending)
    command = [sys.executable, "-X", "faulthandler", __file__, "--worker", log_path,
               "--ops-exact", ",".join(state.pending),
               "--resume", resume, *config_arguments(state.config)]
    worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr_file, text=True)
    current_op, current_seq, since, position = None, None, time.monotonic(), 0
    hung = False
    while True:
        finished = worker.poll() is not None
        position, events = read_events(log_path, position)
        if events:
            since = time.monotonic()  # the timeout counts from the last sign of progress
        for event in events:
            kind = event["event"]
            if kind == "start":
                current_op = event["op"]
                state.reports.setdefault(current_op, OpReport(current_op))
            elif kind == "sample":
                current_seq = event["seq"]
            elif kind == "outcome":
                state.reports[current_op].add(SampleOutcome(**event["outcome"]))
                current_seq = None
            elif kind == "harness_error":
                error = SampleOutcome(-1, "-", "-", -1, "failed", "harness error: " + event["text"])
                state.reports[current_op].add(error)
            elif kind == "done":
                finish_op(state, current_op, event["seconds"])
                current_op, current_seq = None, None
        if finished:
            break
        if current_op is not None and time.monotonic() - since > state.op_timeout:
            worker.kill()  # our own child, by its handle
            worker.wait()
            hung = True
            break
        time.sleep(0.1)
    stderr_file.seek(0)
    stderr = stderr_file.read()
    stderr_file.close()
    os.unlink(log_path)
    if current_op is not None:
        record_crash(state, current_op, current_seq, worker.returncode, stderr, hung)
    elif worker.returncode != 0 and state.pending:
        raise WorkerStartError(f"conformance worker failed outside any operator:\n{stderr[-2000:]}")


def record_crash(state: Supervision, op: str, seq: int | None, returncode: int, stderr: str, hung: bool) -> None:
    """The worker died (or was killed) inside ``op``, at sample ``seq`` (None: between samples)."""
    report = state.reports[op]
    report.crashes += 1
    why = f"timeout: no progress for {state.op_timeout:.0f} s" if hung else crash_description(returncode, stderr)
    report.add(SampleOutcome(seq if seq is not None else -1, "-", "-", -1, "failed", why))
    if seq is None or report.crashes >= state.max_crashes:
        report.abandoned = True
        finish_op(state, op, report.seconds)
    else:
        state.resume[op] = seq


def crash_description(returncode: int, stderr: str) -> str:
    """'worker died (SIGSEGV): Fatal Python error: ... at <innermost Python frame>' from the
    worker's exit status and faulthandler's report on stderr."""
    status = signal.Signals(-returncode).name if returncode < 0 else f"exit code {returncode}"
    lines = stderr.splitlines()
    fatal = next((line.strip() for line in lines if line.startswith("Fatal Python error")), "")
    frames = [line.strip() for line in lines if line.strip().startswith("File ")]
    where = f" at {frames[0]}" if fatal and frames else ""  # faulthandler lists the innermost frame first
    return f"worker died ({status}){': ' + fatal if fatal else ''}{where}"


def finish_op(state: Supervision, op: str, seconds: float) -> None:
    state.reports[op].seconds += seconds
    state.pending.remove(op)
    if state.progress:
        print_progress(state.reports[op], state.total - len(state.pending), state.total)


def read_events(path: str, position: int) -> tuple[int, list[dict]]:
    with open(path, "rb") as f:
        f.seek(position)
        data = f.read()
    complete = data[: data.rfind(b"\n") + 1]  # a partly written last line waits for the next poll
    events = [json.loads(line) for line in complete.decode().splitlines() if line.strip()]
    return position + len(complete), events


def config_arguments(config: OpCheckConfig) -> list[str]:
    arguments = ["--dtypes", ",".join(str(d).removeprefix("torch.") for d in config.dtypes)]
    if config.limit_samples is not None:
        arguments += ["--limit-samples", str(config.limit_samples)]
    if not config.check_grads:
        arguments.append("--no-grads")
    return arguments


def print_progress(report: OpReport, done: int, total: int) -> None:
    status = "ok  " if report.failed == 0 else "FAIL"
    line = (f"[{done}/{total}] {status} {report.op}: {report.passed} passed, {report.failed} failed, "
            f"{report.skipped} skipped ({report.seconds:.1f} s)")
    if report.abandoned:
        line += f" -- abandoned after {report.crashes} crashes"
    if report.first_error:
        line += f"\n        first error: {report.first_error[:300]}"
    print(line, flush=True)


# ---------------------------------------------------------------------------------------------
# Summary and command line
# ---------------------------------------------------------------------------------------------


def summarize(reports: list[OpReport], seconds: float) -> dict:
    passed = sum(r.passed for r in reports)
    failed = sum(r.failed for r in reports)
    skip_reasons: Counter = Counter()
    for r in reports:
        skip_reasons.update(r.skip_reasons)
    return {
        "ops": len(reports),
        "ops_failed": sum(1 for r in reports if r.failed),
        "passed": passed,
        "failed": failed,
        "skipped": sum(r.skipped for r in reports),
        "errors_matched": sum(r.errors_matched for r in reports),
        "crashes": sum(r.crashes for r in reports),
        "ops_abandoned": [r.op for r in reports if r.abandoned],
        "pass_percent": round(100.0 * passed / (passed + failed), 3) if passed + failed else 100.0,
        "seconds": round(seconds, 1),
        "skip_reasons": dict(skip_reasons.most_common()),
    }


def print_summary(summary: dict, reports: list[OpReport]) -> None:
    print("\nFailures by operator (first error):")
    for r in sorted((r for r in reports if r.failed), key=lambda r: -r.failed):
        print(f"  {r.op}: {r.failed} failed / {r.passed + r.failed} run -- {r.first_error[:300]}")
    print("\nSkips by reason:")
    for reason, count in summary["skip_reasons"].items():
        print(f"  {count:6d}  {reason}")
    if summary["ops_abandoned"]:
        print(f"\nAbandoned after repeated crashes (later samples not run): {', '.join(summary['ops_abandoned'])}")
    print(f"\n{summary['ops']} ops ({summary['ops_failed']} with failures): {summary['passed']} passed, "
          f"{summary['failed']} failed, {summary['skipped']} skipped samples; pass rate "
          f"{summary['pass_percent']}% ({summary['errors_matched']} passes are matching exceptions, "
          f"{summary['crashes']} crashes); {summary['seconds']} s")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names or full names (default: all of op_db)")
    parser.add_argument("--limit-samples", type=int, help="at most N samples per op, dtype and mode")
    parser.add_argument("--json", help="write the summary and per-op results to this file")
    parser.add_argument("--dtypes", default=",".join(str(d).removeprefix("torch.") for d in FORWARD_DTYPES),
                        help="forward dtypes (default: %(default)s)")
    parser.add_argument("--no-grads", action="store_true", help="skip the float32 gradient checks")
    parser.add_argument("--in-process", action="store_true", help="no worker subprocess (a crash ends the sweep)")
    parser.add_argument("--op-timeout", type=float, default=900.0,
                        help="seconds without progress before a worker counts as hung")
    parser.add_argument("--max-crashes", type=int, default=8, help="crashes before an op is abandoned")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: event log of a worker
    parser.add_argument("--ops-exact", help=argparse.SUPPRESS)  # internal: full names for a worker
    parser.add_argument("--resume", default="", help=argparse.SUPPRESS)  # internal: op=seq,...
    return parser.parse_args(argv)


def config_from(arguments: argparse.Namespace) -> OpCheckConfig:
    dtypes = tuple(getattr(torch, name) for name in arguments.dtypes.split(",") if name)
    return OpCheckConfig(dtypes=dtypes, check_grads=not arguments.no_grads, limit_samples=arguments.limit_samples)


def worker_main(arguments: argparse.Namespace) -> int:
    by_key = {op_key(op): op for op in op_db}
    ops = [by_key[k] for k in arguments.ops_exact.split(",")]
    resume = {k: int(v) for k, v in (item.rsplit("=", 1) for item in arguments.resume.split(",") if item)}
    with open(arguments.worker, "a") as log:
        def emit(event: dict) -> None:
            log.write(json.dumps(event) + "\n")
            log.flush()

        run_in_process(ops, config_from(arguments), emit, resume)
    return 0


def run_unsupervised(ops: list[OpInfo], config: OpCheckConfig) -> list[OpReport]:
    reports = []
    for index, op in enumerate(ops):
        reports.append(check_op(op, config))
        print_progress(reports[-1], index + 1, len(ops))
    return reports


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    if arguments.worker:
        return worker_main(arguments)
    config = config_from(arguments)
    ops = select_ops(arguments.ops.split(",") if arguments.ops else None)
    start = time.perf_counter()
    if arguments.in_process:
        reports = run_unsupervised(ops, config)
    else:
        reports = run_supervised(ops, config, arguments.op_timeout, arguments.max_crashes)
    summary = summarize(reports, time.perf_counter() - start)
    print_summary(summary, reports)
    if arguments.json:
        data = {"summary": summary, "torch": torch.__version__,
                "config": {k: v for k, v in vars(arguments).items() if k not in ("worker", "ops_exact", "resume")},
                "ops": {r.op: r.to_json() for r in reports}}
        Path(arguments.json).write_text(json.dumps(data, indent=1))
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
