"""Re-runs dumped operators with chosen numerics switches: ``python -m
npusim.compare.explain_worker JOB.json RESULT.json``.

Each operator is called again from the benchmark's dumped inputs (its tensor files) once per
variant, and its outputs are compared with the benchmark's dumped outputs. A variant sets:

- ``device``: ``npu`` (the simulated NPU's kernels and rules) or ``cpu`` (none of them);
- ``autocast``: the dtype of ``torch.autocast("npu")`` around the call, or null;
- ``hf32``: ``[matmul, conv]`` of ``torch.npu.matmul.allow_hf32`` / ``torch.npu.conv.allow_hf32``;
- ``composite``: a torch_npu operator runs as its fp32 composite instead of the fused kernel.

The process-wide saturation mode is whatever this process was started with (the caller starts a
second worker with INF_NAN mode for the "saturation off" variant).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from typing import Any

__all__ = ["main", "rebuild", "compare_outputs"]


class CannotRebuild(ValueError):
    """A dumped argument that cannot be turned back into a value."""


def rebuild(record: Any, data_dir: str, device: str) -> Any:
    import torch

    if record is None:
        return None
    if isinstance(record, list):
        return [rebuild(item, data_dir, device) for item in record]
    if not isinstance(record, dict):
        raise CannotRebuild(f"unexpected record {record!r}")
    if not record:
        raise CannotRebuild("an argument msprobe did not record (a positional device or dtype)")
    kind = record.get("type")
    if not isinstance(kind, str):
        return {key: rebuild(value, data_dir, device) for key, value in record.items()}
    if kind == "torch.Tensor":
        name = record.get("data_name")
        if not name:
            raise CannotRebuild("a tensor without its data file (dump with task tensor)")
        tensor = torch.load(os.path.join(data_dir, name), map_location="cpu", weights_only=True)
        return tensor.to(device)
    if kind in ("int", "float", "bool", "str"):
        return record.get("value")
    if kind == "slice":
        return slice(*record.get("value", [None, None, None]))
    if kind == "ellipsis":
        return Ellipsis
    if kind == "torch.Size":
        return torch.Size(record.get("value", []))
    if kind == "torch.dtype":
        return getattr(torch, str(record.get("value")).split(".", 1)[-1])
    if kind == "torch.device":
        value = str(record.get("value"))
        return torch.device(device) if value.startswith(("npu", "cpu")) else torch.device(value)
    if kind == "torch.memory_format":
        return getattr(torch, str(record.get("format")))
    raise CannotRebuild(f"an argument of type {kind}")


def _tensors(value: Any, found: list) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors(item, found)
    return found


def compare_outputs(produced: list, expected: list) -> dict[str, Any]:
    """Bit-for-bit equality and the relative L2 difference of each output pair."""
    import torch

    if len(produced) != len(expected):
        return {"exact": False, "relative": None, "max_abs": None,
                "note": f"{len(produced)} outputs against the benchmark's {len(expected)}"}
    exact = True
    relative = 0.0
    max_abs = 0.0
    dtypes = []
    for mine, theirs in zip(produced, expected):
        mine, theirs = mine.detach().cpu(), theirs.detach().cpu()
        dtypes.append([str(mine.dtype), str(theirs.dtype)])
        if mine.shape != theirs.shape:
            return {"exact": False, "relative": None, "max_abs": None, "dtypes": dtypes,
                    "note": f"shape {list(mine.shape)} against {list(theirs.shape)}"}
        if mine.dtype != theirs.dtype:
            exact = False
        if mine.numel() == 0:
            continue
        a, b = mine.double(), theirs.double()
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        if not bool(same.all()):
            exact = False
        finite = torch.isfinite(a) & torch.isfinite(b)
        difference = (a - b)[finite]
        if difference.numel():
            max_abs = max(max_abs, float(difference.abs().max()))
            norm = float(torch.linalg.vector_norm(b[finite]))
            distance = float(torch.linalg.vector_norm(difference))
            relative = max(relative, distance / norm if norm else (math.inf if distance else 0.0))
    return {"exact": exact, "relative": relative, "max_abs": max_abs, "dtypes": dtypes}


@contextlib.contextmanager
def _switches(variant: dict[str, Any]):
    import torch

    previous = (torch.npu.matmul.allow_hf32, torch.npu.conv.allow_hf32)
    matmul, conv = variant.get("hf32") or [False, False]
    torch.npu.matmul.allow_hf32 = bool(matmul)
    torch.npu.conv.allow_hf32 = bool(conv)
    dtype = variant.get("autocast")
    try:
        with torch.no_grad():
            if dtype and variant.get("device", "npu") == "npu":
                with torch.autocast("npu", dtype=getattr(torch, dtype.split(".", 1)[-1])):
                    yield
            else:
                yield
    finally:
        torch.npu.matmul.allow_hf32, torch.npu.conv.allow_hf32 = previous


def _run_operator(operator: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    from .api_catalog import ApiCatalog
    from .composites import composite_for

    device = variant.get("device", "npu")
    prefix, api = operator["prefix"], operator["api"]
    function = composite_for(api) if prefix == "NPU" and variant.get("composite") else None
    if function is None:
        function = ApiCatalog.resolve(prefix, api)
    if function is None:
        return {"error": f"{prefix}.{api} cannot be found in this torch"}
    data_dir = operator["data_dir"]
    try:
        args = rebuild(operator["args"], data_dir, device)
        kwargs = rebuild(operator["kwargs"], data_dir, device) if operator.get("kwargs") else {}
        expected = _tensors(rebuild(operator["outputs"], data_dir, "cpu"), [])
    except (CannotRebuild, OSError, RuntimeError) as error:
        return {"error": f"cannot rebuild the call: {error}"}
    try:
        with _switches(variant):
            result = function(*args, **kwargs)
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}
    return compare_outputs(_tensors(result, []), expected)


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) != 2:
        print("usage: python -m npusim.compare.explain_worker JOB.json RESULT.json", file=sys.stderr)
        return 2
    with open(arguments[0], encoding="utf-8") as handle:
        job = json.load(handle)
    import torch  # noqa: F401
    import npusim  # noqa: F401  (the simulated NPU)

    results: dict[str, dict[str, Any]] = {}
    for operator in job["operators"]:
        results[operator["entry"]] = {name: _run_operator(operator, variant)
                                      for name, variant in operator["variants"].items()}
    with open(arguments[1], "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
