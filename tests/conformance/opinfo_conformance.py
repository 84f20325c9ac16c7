"""Operator conformance of the npu device against PyTorch's CPU kernels, over PyTorch's OpInfo database.

npusim runs every aten operator on ``npu`` as the CPU kernel working on device memory, so for each
OpInfo and each of its sample inputs the npu result must equal the CPU result bit for bit (NaN
payloads and signed zeros included), with the same dtype, shape and strides, on the npu device.
Random operators are compared after seeding both runs identically (``torch.manual_seed`` seeds the
npu generators too); operators whose output is uninitialized memory are compared on metadata only.

Library use (the pytest subset does this)::

    report = check_op(op, OpCheckConfig(limit_samples=8))

Script use::

    python tests/conformance/opinfo_conformance.py [--ops name,...] [--limit-samples N] [--json out.json]

The script runs the operators in a worker subprocess by default, so that a crash or a hang in one
operator is recorded as that operator's failure instead of ending the sweep.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable

REPOSITORY = Path(__file__).resolve().parents[2]

try:  # an installed npusim wins; else the checkout's python/ folder
    import npusim  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPOSITORY / "python"))
    import npusim  # noqa: F401

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

DEVICE = "npu"

# float32 is the reference floating dtype; the integer and bool dtypes are checked where the op
# supports them (float64/float16/complex would multiply the runtime for little extra coverage of
# the executor, which is dtype-agnostic).
FORWARD_DTYPES = (torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool)
GRAD_DTYPE = torch.float32

# Every op call is preceded by torch.manual_seed(CALL_SEED) on both devices, so random operators
# (bernoulli, normal, rand*, multinomial, dropout, ...) draw the same numbers; for deterministic
# operators the reseeding is harmless.
CALL_SEED = 20240611
SAMPLE_SEED = 0  # seeds sample generation, so a sample list is reproducible
COTANGENT_SEED = 7  # a private generator draws the backward cotangents

# ---------------------------------------------------------------------------------------------
# Skips and partial checks. Every entry carries the reason why npu cannot, or need not, match CPU.
# ---------------------------------------------------------------------------------------------

# Whole OpInfos (by full_name, or by name for all variants) that are not compared.
SKIPPED_OPS: dict[str, str] = {
    # filled in from the findings of the full sweep; see the report in this folder's README
}

# OpInfos whose output values are uninitialized memory: only metadata (dtype, shape, strides,
# device) can be compared. Matched by OpInfo name.
UNINITIALIZED_OUTPUT_OPS: dict[str, str] = {
    name: "output is uninitialized memory (torch.empty semantics): only metadata is compared"
    for name in ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided")
}

# Per-sample categories, decided when the CPU result is known.
SKIP_NON_STRIDED_OUTPUT = (
    "CPU result has a sparse/non-strided layout: npu tensors are strided only, as in torch_npu "
    "(npusim rejects other layouts by design)"
)
SKIP_NO_GRADIENT = "grad: the sample has no differentiable float output or no input requiring grad"

# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SampleFailure:
    dtype: str
    mode: str  # "forward" or "grad"
    index: int  # position in op.sample_inputs(...)
    sample: str  # a short description of the sample
    error: str


@dataclasses.dataclass
class OpReport:
    op: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors_matched: int = 0  # passed samples where CPU and npu raised the same exception type
    seconds: float = 0.0
    skip_reasons: dict[str, int] = dataclasses.field(default_factory=dict)
    failures: list[SampleFailure] = dataclasses.field(default_factory=list)

    @property
    def first_error(self) -> str | None:
        return self.failures[0].error if self.failures else None

    def count_skip(self, reason: str, samples: int = 1) -> None:
        self.skipped += samples
        self.skip_reasons[reason] = self.skip_reasons.get(reason, 0) + samples

    def to_json(self, max_failures: int = 50) -> dict:
        data = dataclasses.asdict(self)
        data["failures"] = data["failures"][:max_failures]
        data["first_error"] = self.first_error
        return data

    @classmethod
    def from_json(cls, data: dict) -> "OpReport":
        fields = {f.name for f in dataclasses.fields(cls)}
        report = cls(**{k: v for k, v in data.items() if k in fields and k != "failures"})
        report.failures = [SampleFailure(**f) for f in data.get("failures", [])]
        return report


@dataclasses.dataclass
class OpCheckConfig:
    dtypes: tuple[torch.dtype, ...] = FORWARD_DTYPES
    check_grads: bool = True
    limit_samples: int | None = None  # per (op, dtype, mode)


class Mismatch(AssertionError):
    """The npu result differs from the CPU result."""


class SampleSkip(Exception):
    """Raised by a run on CPU when the sample cannot be compared; the message is the reason."""


# ---------------------------------------------------------------------------------------------
# Selecting operators
# ---------------------------------------------------------------------------------------------


def op_key(op: OpInfo) -> str:
    return op.full_name


def all_ops() -> list[OpInfo]:
    return list(op_db)


def select_ops(names: Iterable[str] | None) -> list[OpInfo]:
    """OpInfos whose full_name or name is in ``names`` (all of op_db when None)."""
    if not names:
        return all_ops()
    wanted = {n.strip() for n in names if n.strip()}
    chosen = [op for op in op_db if op.full_name in wanted or op.name in wanted]
    unknown = wanted - {op.full_name for op in chosen} - {op.name for op in chosen}
    if unknown:
        raise KeyError(f"no OpInfo named {sorted(unknown)}")
    return chosen


def op_skip_reason(op: OpInfo) -> str | None:
    return SKIPPED_OPS.get(op.full_name) or SKIPPED_OPS.get(op.name)


def forward_dtypes(op: OpInfo, wanted: Iterable[torch.dtype]) -> list[torch.dtype]:
    supported = op.supported_dtypes("cpu")
    return [d for d in wanted if d in supported]


def checks_grads(op: OpInfo) -> bool:
    return op.supports_autograd and GRAD_DTYPE in op.supported_backward_dtypes("cpu")


# ---------------------------------------------------------------------------------------------
# Moving samples between devices
# ---------------------------------------------------------------------------------------------


class DeviceCopier:
    """Copies the tensors of a nested structure to a device, keeping their exact layout.

    A plain ``.to(device)`` makes non-dense tensors contiguous, and a different layout can change
    a CPU kernel's arithmetic order (hence its last bits) or its output strides. So each distinct
    storage is copied byte for byte and every tensor is rebuilt on it with its original offset,
    sizes and strides; tensors sharing a storage keep sharing it, and the same tensor object maps
    to the same copy. Copies are fresh leaves (``requires_grad`` as in the sample). CPU device
    arguments (factory ``device=`` keywords) become the target device.
    """

    def __init__(self, device: str):
        self.device = torch.device(device)
        self._tensors: dict[int, torch.Tensor] = {}
        self._storages: dict[int, torch.UntypedStorage] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if isinstance(value, torch.device) and value.type == "cpu":
            return self.device
        if isinstance(value, str) and value == "cpu":
            return str(self.device.type)
        if isinstance(value, torch.Size):
            return value
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
            return type(value)(*(self(v) for v in value))
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value

    def sample(self, sample: SampleInput) -> SampleInput:
        return SampleInput(
            self(sample.input),
            args=self(sample.args),
            kwargs=self(sample.kwargs),
            output_process_fn_grad=sample.output_process_fn_grad,
            broadcasts_input=sample.broadcasts_input,
            name=sample.name,
        )

    def _tensor(self, t: torch.Tensor) -> torch.Tensor:
        if id(t) in self._tensors:
            return self._tensors[id(t)]
        if t.layout != torch.strided or type(t) not in (torch.Tensor, torch.nn.Parameter):
            copy = t.detach().to(self.device)  # no plain storage to rebuild from; no such samples today
        else:
            storage = self._storage(t)
            with torch.no_grad():
                copy = torch.empty(0, dtype=t.dtype, device=self.device)
                copy.set_(storage, t.storage_offset(), t.size(), t.stride())
        if t.requires_grad:
            copy.requires_grad_(True)
        self._tensors[id(t)] = copy
        return copy

    def _storage(self, t: torch.Tensor) -> torch.UntypedStorage:
        source = t.untyped_storage()
        key = source.data_ptr()
        if key and key in self._storages:
            return self._storages[key]
        raw = torch.empty(0, dtype=torch.uint8).set_(source)  # the storage's bytes as a tensor
        copy = raw.detach().to(self.device, copy=True).untyped_storage()
        if key:  # empty storages (data_ptr 0) are never shared
            self._storages[key] = copy
        return copy


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors of a nested structure, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


def has_non_strided_tensor(value: Any) -> bool:
    return any(t.layout != torch.strided for t in tensors_in(value))


# ---------------------------------------------------------------------------------------------
# Comparing results
# ---------------------------------------------------------------------------------------------

_BIT_VIEWS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t: torch.Tensor) -> torch.Tensor:
    """``t`` on CPU, reinterpreted as integers so that equality is bitwise (NaN payloads, -0.0)."""
    t = t.detach().cpu()
    if t.dtype == torch.bool:
        return t
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj())
    return t.view(_BIT_VIEWS[t.element_size()])


def expected_device(cpu_tensor: torch.Tensor) -> torch.device:
    return torch.device(DEVICE, 0) if cpu_tensor.device.type == "cpu" else cpu_tensor.device


def compare_tensors(expected: torch.Tensor, actual: Any, where: str, values: bool) -> None:
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{where}: CPU gave a tensor, npu gave {type(actual).__name__}")
    want_device = expected_device(expected)
    checks = (
        ("device", want_device, actual.device),
        ("dtype", expected.dtype, actual.dtype),
        ("layout", expected.layout, actual.layout),
        ("shape", tuple(expected.shape), tuple(actual.shape)),
    )
    for what, want, got in checks:
        if want != got:
            raise Mismatch(f"{where}: {what} differs: CPU {want}, npu {got}")
    if expected.layout != torch.strided:
        return
    if expected.stride() != actual.stride():
        raise Mismatch(f"{where}: strides differ: CPU {expected.stride()}, npu {actual.stride()}")
    if values and not torch.equal(bits(expected), bits(actual)):
        raise Mismatch(f"{where}: values differ: {describe_difference(expected, actual)}")


def describe_difference(expected: torch.Tensor, actual: torch.Tensor) -> str:
    """Where the first differing element is, and how many differ."""
    e = expected.detach().cpu().reshape(-1)
    a = actual.detach().cpu().reshape(-1)
    differ = (bits(e) != bits(a)).nonzero().reshape(-1)
    first = int(differ[0])
    return f"{differ.numel()}/{e.numel()} elements, first at flat index {first}: CPU {e[first].item()!r}, npu {a[first].item()!r}"


def same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def compare_results(expected: Any, actual: Any, where: str = "output", values: bool = True) -> None:
    """Raise Mismatch unless ``actual`` (npu) equals ``expected`` (CPU) as described above."""
    if isinstance(expected, torch.Tensor):
        compare_tensors(expected, actual, where, values)
    elif isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        if type(actual) is not type(expected) or len(actual) != len(expected):
            raise Mismatch(f"{where}: CPU gave {type(expected).__name__}[{len(expected)}], npu {type(actual).__name__}"
                           f"[{len(actual) if hasattr(actual, '__len__') else '-'}]")
        for i, (e, a) in enumerate(zip(expected, actual)):
            compare_results(e, a, f"{where}[{i}]", values)
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or expected.keys() != actual.keys():
            raise Mismatch(f"{where}: dict keys differ")
        for k in expected:
            compare_results(expected[k], actual[k], f"{where}[{k!r}]", values)
    elif not same_scalar(expected, actual):
        raise Mismatch(f"{where}: CPU {expected!r}, npu {actual!r}")


# ---------------------------------------------------------------------------------------------
# Running one sample
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One device's run of a sample: its (copied) inputs, and its result or exception."""

    sample: SampleInput
    result: Any = None
    error: BaseException | None = None


def call_op(op: OpInfo, sample: SampleInput) -> Any:
    torch.manual_seed(CALL_SEED)  # random operators draw the same numbers on both devices
    return op(sample.input, *sample.args, **sample.kwargs)


def run_on(device: str, op: OpInfo, sample: SampleInput, body: Callable[[OpInfo, SampleInput], Any]) -> Run:
    run = Run(DeviceCopier(device).sample(sample))
    try:
        run.result = body(op, run.sample)
    except Exception as error:  # noqa: BLE001 - any exception is a result to compare
        run.error = error
    return run


def error_text(error: BaseException) -> str:
    lines = str(error).strip().splitlines() or [""]
    return f"{type(error).__name__}: {lines[0][:400]}"


def compare_runs(cpu: Run, npu: Run, values: bool) -> str | None:
    """None when the runs agree, else why they do not. Both raising the same type agrees."""
    if cpu.error is not None or npu.error is not None:
        if cpu.error is None:
            return f"npu raised, CPU did not: {error_text(npu.error)}"
        if npu.error is None:
            return f"CPU raised, npu did not: {error_text(cpu.error)}"
        if type(cpu.error) is not type(npu.error):
            return f"different exceptions: CPU {error_text(cpu.error)} | npu {error_text(npu.error)}"
        return None
    try:
        compare_results(cpu.result, npu.result, "output", values)
        # In-place and out= operators write their arguments: those must agree too.
        compare_results(tensors_in(cpu.sample.input), tensors_in(npu.sample.input), "input after call", values)
        compare_results(tensors_in((cpu.sample.args, cpu.sample.kwargs)),
                        tensors_in((npu.sample.args, npu.sample.kwargs)), "argument after call", values)
    except Mismatch as mismatch:
        return str(mismatch)
    return None


def forward(op: OpInfo, sample: SampleInput) -> Any:
    return call_op(op, sample)


def backward(op: OpInfo, sample: SampleInput) -> list[torch.Tensor | None]:
    """Input gradients of the op's differentiable outputs, for a fixed random cotangent.

    The cotangent is drawn on CPU from a private generator (same values for both devices,
    independent of the global RNG) and copied to the outputs' device.
    """
    raw = call_op(op, sample)
    if has_non_strided_tensor(raw):
        raise SampleSkip(SKIP_NON_STRIDED_OUTPUT)
    outputs = sample.output_process_fn_grad(raw)
    differentiable = [t for t in tensors_in(outputs) if t.requires_grad and t.is_floating_point()]
    inputs = [t for t in tensors_in((sample.input, sample.args, sample.kwargs)) if t.requires_grad]
    if not differentiable or not inputs:
        raise SampleSkip(SKIP_NO_GRADIENT)
    generator = torch.Generator().manual_seed(COTANGENT_SEED)
    cotangents = [torch.randn(t.shape, dtype=t.dtype, generator=generator).to(t.device) for t in differentiable]
    grads = torch.autograd.grad(differentiable, inputs, cotangents, allow_unused=True)
    return [None if g is None else g for g in grads]


def describe_sample(sample: SampleInput) -> str:
    def brief(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            layout = "" if v.is_contiguous() else f" stride={v.stride()}"
            return f"Tensor{list(v.shape)}{layout}"
        if isinstance(v, (list, tuple)) and not isinstance(v, torch.Size):
            inner = ", ".join(brief(x) for x in v[:6])
            return f"[{inner}{', ...' if len(v) > 6 else ''}]"
        return repr(v)[:60]

    parts = [brief(sample.input)] + [brief(a) for a in sample.args] + [f"{k}={brief(v)}" for k, v in sample.kwargs.items()]
    return (f"{sample.name}: " if sample.name else "") + "(" + ", ".join(parts) + ")"


# ---------------------------------------------------------------------------------------------
# Checking one operator
# ---------------------------------------------------------------------------------------------


def make_samples(op: OpInfo, dtype: torch.dtype, requires_grad: bool, limit: int | None) -> list[SampleInput]:
    torch.manual_seed(SAMPLE_SEED)  # the same sample list every time
    return list(islice(op.sample_inputs("cpu", dtype, requires_grad=requires_grad), limit))


def check_sample(op: OpInfo, sample: SampleInput, mode: str, report: OpReport) -> str | None:
    """Run one sample on both devices and count it; return the failure text, if any."""
    body = forward if mode == "forward" else backward
    values = op.name not in UNINITIALIZED_OUTPUT_OPS
    cpu = run_on("cpu", op, sample, body)
    if isinstance(cpu.error, SampleSkip):
        report.count_skip(str(cpu.error))
        return None
    if cpu.error is None and has_non_strided_tensor(cpu.result):
        report.count_skip(SKIP_NON_STRIDED_OUTPUT)
        return None
    npu = run_on(DEVICE, op, sample, body)
    failure = compare_runs(cpu, npu, values)
    if failure is None:
        report.passed += 1
        if cpu.error is not None:
            report.errors_matched += 1
    else:
        report.failed += 1
    return failure


def check_mode(op: OpInfo, dtype: torch.dtype, mode: str, config: OpCheckConfig, report: OpReport) -> None:
    try:
        samples = make_samples(op, dtype, mode == "grad", config.limit_samples)
    except Exception as error:  # noqa: BLE001 - the OpInfo itself failed on CPU
        report.count_skip(f"sample generation failed on CPU: {error_text(error)[:120]}")
        return
    for index, sample in enumerate(samples):
        failure = check_sample(op, sample, mode, report)
        if failure is not None:
            report.failures.append(SampleFailure(str(dtype).removeprefix("torch."), mode, index,
                                                 describe_sample(sample), failure))


def check_op(op: OpInfo, config: OpCheckConfig | None = None) -> OpReport:
    """Compare every sample of ``op`` on CPU and npu (forward for each dtype; float32 grads)."""
    config = config or OpCheckConfig()
    report = OpReport(op_key(op))
    start = time.perf_counter()
    reason = op_skip_reason(op)
    if reason is not None:
        report.count_skip(reason)
        return report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation and fallback warnings would drown the report
        for dtype in forward_dtypes(op, config.dtypes):
            check_mode(op, dtype, "forward", config, report)
        if config.check_grads and checks_grads(op):
            check_mode(op, GRAD_DTYPE, "grad", config, report)
    report.seconds = round(time.perf_counter() - start, 3)
    return report


# ---------------------------------------------------------------------------------------------
# Sweeps: in-process, or supervised in worker subprocesses
# ---------------------------------------------------------------------------------------------


def crash_report(key: str, why: str) -> OpReport:
    report = OpReport(key, failed=1)
    report.failures.append(SampleFailure("-", "-", -1, "-", why))
    return report


def run_in_process(ops: list[OpInfo], config: OpCheckConfig, events: Callable[[dict], None]) -> None:
    """Check ``ops`` here, announcing each start and result through ``events``."""
    for op in ops:
        events({"event": "start", "op": op_key(op)})
        try:
            report = check_op(op, config)
        except Exception:  # noqa: BLE001 - a harness bug must not end the sweep
            report = crash_report(op_key(op), "harness error: " + traceback.format_exc(limit=3)[-600:])
        events({"event": "done", "op": op_key(op), "report": report.to_json()})


def run_supervised(ops: list[OpInfo], config: OpCheckConfig, op_timeout: float, progress: bool) -> list[OpReport]:
    """Check ``ops`` in worker subprocesses; a crash or a hang fails only the operator at fault.

    The worker appends JSON lines (start/done events) to a file; when it dies or an operator runs
    past ``op_timeout`` seconds, the operator it had started is recorded as failed and a new worker
    continues with the remaining operators.
    """
    pending = [op_key(op) for op in ops]
    reports: dict[str, OpReport] = {}
    while pending:
        with tempfile.NamedTemporaryFile("w+", suffix=".jsonl", delete=False) as log:
            log_path = log.name
        command = [sys.executable, __file__, "--worker", log_path, "--ops-exact", ",".join(pending),
                   *config_arguments(config)]
        worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        current, started, position = None, time.monotonic(), 0
        while True:
            finished = worker.poll() is not None
            position, events = read_events(log_path, position)
            for event in events:
                if event["event"] == "start":
                    current, started = event["op"], time.monotonic()
                else:
                    reports[event["op"]] = OpReport.from_json(event["report"])
                    pending.remove(event["op"])
                    current = None
                    if progress:
                        print_progress(reports[event["op"]], len(reports), len(ops))
            if finished:
                break
            if current is not None and time.monotonic() - started > op_timeout:
                worker.kill()  # our own child, by its handle
                worker.wait()
                reports[current] = crash_report(current, f"timeout: still running after {op_timeout:.0f} s")
                pending.remove(current)
                current = None
                break
            time.sleep(0.2)
        stderr = worker.stderr.read() if worker.stderr else ""
        os.unlink(log_path)
        if current is not None:  # the worker died inside this operator
            tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
            reports[current] = crash_report(current, f"worker died (exit code {worker.returncode}) {tail}")
            pending.remove(current)
            if progress:
                print_progress(reports[current], len(reports), len(ops))
        elif worker.returncode not in (0, None) and pending:
            raise RuntimeError(f"conformance worker failed before any operator:\n{stderr[-2000:]}")
    return [reports[op_key(op)] for op in ops if op_key(op) in reports]


def read_events(path: str, position: int) -> tuple[int, list[dict]]:
    with open(path) as f:
        f.seek(position)
        text = f.read()
    complete = text[: text.rfind("\n") + 1]  # a partly written last line waits for the next poll
    events = [json.loads(line) for line in complete.splitlines() if line.strip()]
    return position + len(complete.encode()), events


def config_arguments(config: OpCheckConfig) -> list[str]:
    arguments = ["--dtypes", ",".join(str(d).removeprefix("torch.") for d in config.dtypes)]
    if config.limit_samples is not None:
        arguments += ["--limit-samples", str(config.limit_samples)]
    if not config.check_grads:
        arguments.append("--no-grads")
    return arguments


def print_progress(report: OpReport, done: int, total: int) -> None:
    status = "ok  " if report.failed == 0 else "FAIL"
    line = f"[{done}/{total}] {status} {report.op}: {report.passed} passed, {report.failed} failed, {report.skipped} skipped ({report.seconds:.1f} s)"
    if report.first_error:
        line += f"\n        first error: {report.first_error[:300]}"
    print(line, flush=True)


# ---------------------------------------------------------------------------------------------
# Summary and command line
# ---------------------------------------------------------------------------------------------


def summarize(reports: list[OpReport], seconds: float) -> dict:
    passed = sum(r.passed for r in reports)
    failed = sum(r.failed for r in reports)
    skipped = sum(r.skipped for r in reports)
    skip_reasons: Counter = Counter()
    for r in reports:
        skip_reasons.update(r.skip_reasons)
    return {
        "ops": len(reports),
        "ops_failed": sum(1 for r in reports if r.failed),
        "passed": passed,
        "failed": failed,
        "skipped": skipped,
        "errors_matched": sum(r.errors_matched for r in reports),
        "pass_percent": round(100.0 * passed / (passed + failed), 3) if passed + failed else 100.0,
        "seconds": round(seconds, 1),
        "skip_reasons": dict(skip_reasons.most_common()),
    }


def print_summary(summary: dict, reports: list[OpReport]) -> None:
    print("\nFailures by operator (first error):")
    for r in sorted((r for r in reports if r.failed), key=lambda r: -r.failed):
        print(f"  {r.op}: {r.failed} failed / {r.passed + r.failed} run -- {r.first_error}")
    print("\nSkips by reason:")
    for reason, count in summary["skip_reasons"].items():
        print(f"  {count:6d}  {reason}")
    print(f"\n{summary['ops']} ops ({summary['ops_failed']} with failures): {summary['passed']} passed, "
          f"{summary['failed']} failed, {summary['skipped']} skipped samples; pass rate "
          f"{summary['pass_percent']}% ({summary['errors_matched']} passes are matching exceptions); "
          f"{summary['seconds']} s")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names or full names (default: all of op_db)")
    parser.add_argument("--limit-samples", type=int, help="at most N samples per op, dtype and mode")
    parser.add_argument("--json", help="write the summary and per-op results to this file")
    parser.add_argument("--dtypes", default=",".join(str(d).removeprefix("torch.") for d in FORWARD_DTYPES),
                        help="forward dtypes (default: %(default)s)")
    parser.add_argument("--no-grads", action="store_true", help="skip the float32 gradient checks")
    parser.add_argument("--in-process", action="store_true", help="no worker subprocess (a crash ends the sweep)")
    parser.add_argument("--op-timeout", type=float, default=900.0, help="seconds before an op counts as hung")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: event log of a worker
    parser.add_argument("--ops-exact", help=argparse.SUPPRESS)  # internal: full names for a worker
    return parser.parse_args(argv)


def config_from(arguments: argparse.Namespace) -> OpCheckConfig:
    dtypes = tuple(getattr(torch, name) for name in arguments.dtypes.split(",") if name)
    return OpCheckConfig(dtypes=dtypes, check_grads=not arguments.no_grads, limit_samples=arguments.limit_samples)


def worker_main(arguments: argparse.Namespace) -> int:
    keys = arguments.ops_exact.split(",")
    by_key = {op_key(op): op for op in op_db}
    with open(arguments.worker, "a") as log:
        def emit(event: dict) -> None:
            log.write(json.dumps(event) + "\n")
            log.flush()

        run_in_process([by_key[k] for k in keys], config_from(arguments), emit)
    return 0


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    if arguments.worker:
        return worker_main(arguments)
    config = config_from(arguments)
    ops = select_ops(arguments.ops.split(",") if arguments.ops else None)
    start = time.perf_counter()
    if arguments.in_process:
        reports: list[OpReport] = []

        def collect(event: dict) -> None:
            if event["event"] == "done":
                reports.append(OpReport.from_json(event["report"]))
                print_progress(reports[-1], len(reports), len(ops))

        run_in_process(ops, config, collect)
    else:
        reports = run_supervised(ops, config, arguments.op_timeout, progress=True)
    summary = summarize(reports, time.perf_counter() - start)
    print_summary(summary, reports)
    if arguments.json:
        data = {"summary": summary, "config": vars(arguments), "torch": torch.__version__,
                "ops": {r.op: r.to_json() for r in reports}}
        Path(arguments.json).write_text(json.dumps(data, indent=1))
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
