"""msprobe's ``compare(input_param, output_path, ...)`` on npusim's compare engine.

``input_param`` holds ``npu_path`` and ``bench_path`` (two ``dump.json`` files); the table goes to
``output_path`` as ``compare_result{suffix}_{timestamp}.csv`` (and ``.xlsx`` with openpyxl).
msprobe's fuzzy, api, cell, data and layer mappings are not served.
"""

from __future__ import annotations

import os
from typing import Any

from npusim.compare.compare_table import compare_dumps, write_table

__all__ = ["compare"]


def compare(input_param: dict[str, Any], output_path: str, **kwargs: Any) -> list[str]:
    from msprobe.pytorch.precision_debugger import MsprobeException

    unsupported = [key for key in ("fuzzy_match", "api_mapping", "cell_mapping", "data_mapping", "layer_mapping")
                   if kwargs.get(key)]
    if unsupported:
        raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR,
                               f"{', '.join(unsupported)} is not supported by npusim's msprobe compare")
    npu_path, bench_path = input_param.get("npu_path"), input_param.get("bench_path")
    if not (isinstance(npu_path, str) and npu_path.endswith("dump.json") and isinstance(bench_path, str)
            and bench_path.endswith("dump.json")):
        raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR,
                               "npu_path and bench_path must both end with dump.json")
    for path in (npu_path, bench_path):
        if not os.path.isfile(path):
            raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, f"{path} does not exist")
    table = compare_dumps(npu_path, bench_path)
    return write_table(table, output_path, kwargs.get("suffix", ""))
