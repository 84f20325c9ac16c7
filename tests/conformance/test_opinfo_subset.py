"""A fixed, representative subset of PyTorch's OpInfo database, compared bit for bit between CPU
and npu by the conformance harness (opinfo_conformance.py; the full sweep is its command line).

One test per operator, for readable reports, and one test over the whole subset that asserts
at least 99% of the samples pass and lists every failure. Operators with a known backend defect
are marked xfail with the root cause (not strict: they start passing when the backend is fixed;
remove the entry then).

Samples are capped per operator, dtype and mode (SAMPLE_LIMIT) to keep the run short.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import opinfo_conformance as conformance  # noqa: E402

SAMPLE_LIMIT = 12
REQUIRED_PASS_PERCENT = 99.0

SUBSET = [
    # unary elementwise
    "abs", "neg", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "reciprocal",
    "sin", "cos", "tanh", "sigmoid", "erf", "erfinv", "lgamma",
    "digamma", "floor", "ceil", "round", "trunc", "sign", "square", "logit",
    "nan_to_num", "clamp", "bitwise_not", "logical_not", "isnan", "isfinite",
    "sgn",
    # binary elementwise
    "add", "sub", "mul", "div.no_rounding_mode", "div.floor_rounding",
    "floor_divide", "remainder", "fmod", "pow", "atan2", "maximum", "minimum",
    "fmax", "eq", "ne", "lt", "logical_and", "bitwise_and",
    "bitwise_or", "bitwise_left_shift", "nextafter", "lerp", "addcmul", "addcdiv",
    "where", "xlogy", "isclose", "logaddexp", "gcd",
    # reductions
    "sum", "mean", "prod", "amax", "amin", "max.reduction_with_dim",
    "argmax", "std", "var_mean", "norm", "linalg.vector_norm", "logsumexp", "all", "any",
    "count_nonzero", "nansum", "median", "mode", "aminmax", "unique",
    "unique_consecutive", "bincount",
    # shape and view
    "view", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "unflatten",
    "narrow", "select", "split", "chunk", "tensor_split", "cat", "stack",
    "movedim", "flip", "roll", "rot90", "repeat", "repeat_interleave", "tile", "tril", "triu",
    "diag", "diagonal", "diag_embed", "unfold", "clone", "as_strided",
    "block_diag", "unbind", "resize_", "view_as_complex", "polar", "to",
    # indexing, scatter, gather
    "__getitem__", "index_select", "index_add", "index_copy", "index_fill", "index_put",
    "masked_fill", "masked_select", "masked_scatter", "gather", "scatter", "scatter_add",
    "scatter_reduce.sum", "scatter_reduce.amax", "take", "take_along_dim", "nonzero",
    "searchsorted", "bucketize", "index_reduce.prod", "slice_scatter",
    # matmul and linalg
    "matmul", "mm", "bmm", "addmm", "addmv", "mv", "dot", "outer", "baddbmm", "einsum",
    "trace", "linalg.inv", "linalg.det", "linalg.solve", "linalg.cholesky",
    "linalg.qr", "linalg.svd", "linalg.eigh", "linalg.cross", "linalg.pinv",
    "linalg.lu_factor", "linalg.lstsq", "triangular_solve",
    # nn.functional
    "nn.functional.linear", "nn.functional.conv1d",
    "nn.functional.conv2d", "nn.functional.conv_transpose2d", "nn.functional.max_pool2d",
    "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d",
    "nn.functional.adaptive_max_pool2d", "nn.functional.batch_norm", "nn.functional.layer_norm",
    "nn.functional.group_norm", "nn.functional.instance_norm", "nn.functional.rms_norm",
    "nn.functional.normalize", "nn.functional.mse_loss", "nn.functional.l1_loss",
    "nn.functional.cross_entropy", "nn.functional.nll_loss",
    "nn.functional.binary_cross_entropy_with_logits", "nn.functional.kl_div",
    "nn.functional.ctc_loss", "nn.functional.relu", "nn.functional.leaky_relu",
    "nn.functional.elu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.mish",
    "nn.functional.softplus", "nn.functional.hardswish",
    "nn.functional.glu", "nn.functional.prelu", "softmax", "log_softmax",
    "nn.functional.embedding", "nn.functional.embedding_bag", "nn.functional.one_hot",
    "nn.functional.pad.constant", "nn.functional.interpolate.bilinear",
    "nn.functional.interpolate.nearest", "nn.functional.grid_sample", "nn.functional.pixel_shuffle",
    "nn.functional.unfold", "nn.functional.cosine_similarity",
    "nn.functional.scaled_dot_product_attention",
    # sorting and selection
    "sort", "argsort", "topk", "msort", "kthvalue",
    # cumulative
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff",
    # random operators (seeded identically on both devices)
    "bernoulli", "normal", "normal.number_mean", "multinomial", "uniform", "exponential",
    "randn_like", "randint_like", "nn.functional.dropout", "nn.functional.rrelu",
    "nn.functional.feature_alpha_dropout.with_train",
    # factories
    "arange", "linspace", "logspace", "zeros", "ones", "full", "eye", "empty", "empty_like",
    "full_like", "new_empty", "tril_indices",
    # conjugate views (fft.hfft materializes one) and eig gradients
    "fft.hfft", "linalg.eig",
]

# Root causes found by the full sweep and not fixed yet (the backend owns the fixes); none today.
# The sweep's three defects (conjugate/negative views recursing in _copy_from, _efficientzerotensor
# without the ZeroTensor key, CompositeImplicitAutograd decompositions next to CPU kernels) are fixed,
# and their operators (sgn, mish, fft.hfft, linalg.eig) are regular members of the subset now.
# SDPA's gradients on npu are laid out as its fused kernel's Meta function lays them out (like their
# inputs, what torch.compile traces with), not as the CPU's flash backward does: the harness
# compares them by value (opinfo_conformance.OWN_GRADIENT_LAYOUT_OPS).
KNOWN_FAILURES: dict[str, str] = {}

_REPORTS: dict[str, conformance.OpReport] = {}
_OPS = {op.full_name: op for op in conformance.op_db if op.full_name in SUBSET}  # exact names, no variants


def report_for(name: str) -> conformance.OpReport:
    """The harness report of one subset operator, computed once per session."""
    if name not in _REPORTS:
        config = conformance.OpCheckConfig(limit_samples=SAMPLE_LIMIT)
        _REPORTS[name] = conformance.check_op(_OPS[name], config)
    return _REPORTS[name]


def failure_lines(report: conformance.OpReport, limit: int = 10) -> str:
    lines = [f"  {report.op} [{f['dtype']} {f['mode']} #{f['index']}] {f['sample'][:120]}\n      {f['detail'][:300]}"
             for f in report.failures[:limit]]
    if len(report.failures) > limit:
        lines.append(f"  ... and {len(report.failures) - limit} more")
    return "\n".join(lines)


def test_subset_is_well_formed():
    assert len(SUBSET) == len(set(SUBSET))
    assert 150 <= len(SUBSET) <= 250
    assert set(KNOWN_FAILURES) <= set(SUBSET)
    assert set(_OPS) == set(SUBSET), set(SUBSET) ^ set(_OPS)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[name], strict=False))
    if name in KNOWN_FAILURES else name
    for name in SUBSET
])
def test_op_conformance(name):
    report = report_for(name)
    assert report.passed + report.skipped > 0, f"{name}: no sample ran"
    assert report.failed == 0, (f"{name}: {report.failed} of {report.passed + report.failed} samples "
                                f"differ from CPU:\n{failure_lines(report)}")


def test_subset_pass_rate():
    reports = [report_for(name) for name in SUBSET]
    summary = conformance.summarize(reports, seconds=0.0)
    failing = [r for r in reports if r.failed]
    listing = "\n".join(failure_lines(r, limit=3) for r in failing)
    print(f"\nsubset: {summary['ops']} ops, {summary['passed']} passed, {summary['failed']} failed, "
          f"{summary['skipped']} skipped samples ({summary['pass_percent']}%)")  # shown with -s
    assert summary["passed"] > 0
    assert summary["pass_percent"] >= REQUIRED_PASS_PERCENT, (
        f"{summary['pass_percent']}% of {summary['passed'] + summary['failed']} samples pass "
        f"(required {REQUIRED_PASS_PERCENT}%); failures:\n{listing}")
