"""msprobe's comparison metrics of one NPU value against its benchmark (msprobe 26.0.0,
``core/compare/npy_compare.py`` for tensors, ``acc_compare.CalcStatsDiff`` for statistics).

Tensor mode (both tensors read from their ``.pt`` files, bfloat16 widened to float32, squeezed):

- the relative error is ``|(n - b) / b|`` computed in the wider of the two dtypes and float32,
  with float32's epsilon added to both where ``b == 0``;
- ``Cosine``: ``n·b / (|n| |b|)`` in float64, 12 decimals (6 above 0.9999), ``1.0`` when both
  are zero, ``Nan`` when one is; ``EucDist``: ``|n - b|``; ``MaxAbsErr``; ``MaxRelativeErr``;
  ``One Thousandth Err Ratio`` / ``Five Thousandths Err Ratio``: the share of elements with a
  relative error below 0.001 / 0.005;
- Inf and NaN at the same places on both sides count as equal (zeroed); at different places the
  metrics are ``N/A``; shapes that differ give ``shape unmatched``; a 0-d tensor has no Cosine,
  EucDist or ratios (``unsupported``).

Statistics mode: for Max, Min, Mean and L2norm, ``diff = npu - bench`` and the relative error
``|diff / bench| * 100`` written as a percentage (``inf`` when the benchmark is 0), ``0`` for
equal values, ``Nan`` / ``inf`` / ``-inf`` / ``N/A`` / ``Diff`` for the non-numeric cases.
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["TensorMetrics", "compare_tensors", "statistic_difference", "format_value", "NAN", "N_A", "UNSUPPORTED",
           "SHAPE_UNMATCH", "THOUSANDTH", "FIVE_THOUSANDTHS"]

NAN = "Nan"
N_A = "N/A"
UNSUPPORTED = "unsupported"
SHAPE_UNMATCH = "shape unmatched"
THOUSANDTH = 0.001
FIVE_THOUSANDTHS = 0.005
_FLOAT64_EPSILON = torch.finfo(torch.float64).eps


def format_value(value: float) -> float:
    """msprobe's rounding of a metric: 12 decimals."""
    return float(f"{value:.12f}")


class TensorMetrics(tuple):
    """(cosine, euclidean distance, max abs error, max relative error, 0.1% ratio, 0.5% ratio,
    message)."""

    __slots__ = ()

    def __new__(cls, values: list[Any], message: str = "") -> "TensorMetrics":
        return super().__new__(cls, (*values, message))

    @property
    def cosine(self): return self[0]

    @property
    def euclidean(self): return self[1]

    @property
    def max_abs_error(self): return self[2]

    @property
    def max_relative_error(self): return self[3]

    @property
    def one_thousandth_ratio(self): return self[4]

    @property
    def five_thousandths_ratio(self): return self[5]

    @property
    def message(self): return self[6]


def _prepare(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.squeeze()


def _wider(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """numpy's ``result_type(n, b, float32)`` after msprobe turns non-float arrays into float64."""
    sides = [dtype if dtype.is_floating_point else torch.float64 for dtype in (a, b)]
    return torch.float64 if torch.float64 in sides else torch.float32


def compare_tensors(npu: torch.Tensor | None, bench: torch.Tensor | None, error: str | None = None) -> TensorMetrics:
    """The six metrics of msprobe's tensor mode; ``error`` is a reason the data cannot be
    compared (``"No real data"``, ``"api unmatched"``, ``"No data"``), which gives
    ``unsupported`` everywhere."""
    if error is not None or npu is None or bench is None:
        return TensorMetrics([UNSUPPORTED] * 6, error or "")
    n, b = _prepare(npu), _prepare(bench)
    if n.numel() == 0:
        return TensorMetrics([UNSUPPORTED] * 6, "This is empty data, can not compare.")
    if tuple(n.shape) != tuple(b.shape):
        return TensorMetrics([SHAPE_UNMATCH] * 6, "Shape of NPU and bench tensor do not match. Skipped.")
    message = ""
    zero_dimensional = n.dim() == 0
    if zero_dimensional:
        message = ("This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', "
                   "'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'. ")
    else:
        n_float, b_float = n.double(), b.double()
        n_invalid = ~torch.isfinite(n_float)
        b_invalid = ~torch.isfinite(b_float)
        if bool(n_invalid.any()) or bool(b_invalid.any()):
            if torch.equal(torch.isinf(n_float), torch.isinf(b_float)) and torch.equal(torch.isnan(n_float),
                                                                                      torch.isnan(b_float)):
                n = n.clone()
                b = b.clone()
                n[n_invalid] = 0
                b[b_invalid] = 0
            else:
                return TensorMetrics([N_A] * 6, "The position of inf or nan in NPU and bench Tensor do not match.")
        if n.dtype != b.dtype:
            message = "Dtype of NPU and bench tensor do not match."
    relative = _relative_error(n, b)
    n64 = n.reshape(-1).double() if not zero_dimensional else n.double()
    b64 = b.reshape(-1).double() if not zero_dimensional else b.double()
    values: list[Any] = []
    # Cosine similarity
    if zero_dimensional:
        values.append(UNSUPPORTED)
    elif n64.numel() == 1:
        values.append(UNSUPPORTED)
        message += "This is a 1-d tensor of length 1."
    else:
        n_norm, b_norm = float(torch.linalg.vector_norm(n64)), float(torch.linalg.vector_norm(b64))
        if n_norm <= _FLOAT64_EPSILON and b_norm <= _FLOAT64_EPSILON:
            values.append(1.0)
        elif n_norm <= _FLOAT64_EPSILON:
            values.append(NAN)
            message += "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data."
        elif b_norm <= _FLOAT64_EPSILON:
            values.append(NAN)
            message += "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."
        else:
            cosine = float(torch.dot(n64, b64)) / (n_norm * b_norm)
            if math.isnan(cosine):
                values.append(NAN)
                message += "Cannot compare by Cosine Similarity, the dump data has NaN."
            else:
                cosine = format_value(cosine)
                values.append(round(cosine, 6) if cosine > 0.9999 else cosine)
    # Euclidean distance
    values.append(UNSUPPORTED if zero_dimensional else float(torch.linalg.vector_norm(n64 - b64)))
    # Max absolute error
    max_abs = float((n64 - b64).abs().max())
    if math.isnan(max_abs):
        values.append(NAN)
        message += "Cannot compare by MaxAbsError, the data contains nan/inf/-inf in dump data."
    else:
        values.append(format_value(max_abs))
    # Max relative error
    max_relative = float(relative.abs().max())
    if math.isnan(max_relative):
        values.append(NAN)
        message += "Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data."
    else:
        values.append(format_value(max_relative) if math.isfinite(max_relative) else max_relative)
    # Error ratios
    for threshold in (THOUSANDTH, FIVE_THOUSANDTHS):
        if zero_dimensional:
            values.append(UNSUPPORTED)
        else:
            values.append(format_value(float((relative < threshold).sum()) / relative.numel()))
    return TensorMetrics(values, message)


def _relative_error(n: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    dtype = _wider(n.dtype, b.dtype)
    n_wide, b_wide = n.to(dtype).clone(), b.to(dtype).clone()
    zero = b_wide == 0
    epsilon = torch.finfo(dtype).eps
    n_wide[zero] += epsilon
    b_wide[zero] += epsilon
    return ((n_wide - b_wide) / b_wide).abs()


# ---------------------------------------------------------------------------------------------
# Statistics mode


def _kind(value: Any) -> str:
    text = str(value)
    lower = text.lower()
    if isinstance(value, float) and math.isnan(value) or lower == "nan":
        return "nan"
    if (isinstance(value, float) and value == math.inf) or lower == "inf":
        return "inf"
    if (isinstance(value, float) and value == -math.inf) or lower == "-inf":
        return "-inf"
    if lower not in ("true", "false"):
        try:
            float(text)
            return "number"
        except ValueError:
            pass
    if any(device in lower for device in ("npu", "cpu", "cuda")):
        return "device"
    if text == N_A:
        return "n/a"
    return "other"


def _text(value: float) -> str:
    return repr(float(value))


def statistic_difference(npu: Any, bench: Any) -> tuple[str, str]:
    """``(diff, relative error)`` of one statistic as msprobe's statistics mode writes them."""
    if str(npu) == str(bench):
        return "0", "0"
    npu_kind, bench_kind = _kind(npu), _kind(bench)
    if npu_kind == "n/a" or bench_kind == "n/a":
        return N_A, N_A
    if npu_kind == "number" and bench_kind == "number":
        difference = float(npu) - float(bench)
        if float(bench) == 0:
            return _text(difference), "inf"
        return _text(difference), _text(abs(difference / float(bench) * 100)) + "%"
    numeric = ("number", "nan", "inf", "-inf")
    if npu_kind == "nan" and bench_kind in numeric or bench_kind == "nan" and npu_kind in numeric:
        return NAN, NAN
    if npu_kind == "inf" and bench_kind in ("number", "-inf"):
        return "inf", "inf"
    if npu_kind == "-inf" and bench_kind in ("number", "inf"):
        return "-inf", "-inf"
    if npu_kind == "number" and bench_kind == "inf":
        return "-inf", "-inf"
    if npu_kind == "number" and bench_kind == "-inf":
        return "inf", "inf"
    if npu_kind == "device" and bench_kind == "device":
        return N_A, N_A
    if "device" in (npu_kind, bench_kind) or "other" in (npu_kind, bench_kind):
        return "Diff", "Diff"
    return N_A, N_A
