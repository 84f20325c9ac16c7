"""Offline CUDA-to-NPU migration and analysis (msFmkTransplt's ``pytorch_gpu2npu.sh`` and
``pytorch_analyse.sh``, contract §15), built on LibCST so that comments and formatting survive.

- :func:`migrate` rewrites a source tree into ``<out>/<name>_msft/`` (``_msft_multi`` with the
  distributed option) and writes the reports ``change_list.csv``, ``unsupported_api.csv``,
  ``unknown_api.csv``, ``api_precision_advice.csv``, ``api_performance_advice.csv``,
  ``cuda_op_list.csv`` and the log ``msFmkTranspltlog.txt``.
- :func:`analyse` writes the reports of one analysis mode into ``<out>/<name>_analysis/``.

The command line is ``npusim migrate`` / ``npusim analyse`` (:mod:`npusim.migration.commands`).
"""

from npusim.migration.analyse import analyse
from npusim.migration.migrate import migrate

__all__ = ["migrate", "analyse"]
