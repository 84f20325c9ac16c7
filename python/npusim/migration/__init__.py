"""Offline CUDA-to-NPU migration and analysis (msFmkTransplt's ``pytorch_gpu2npu.sh`` and
``pytorch_analyse.sh``, contract §15), built on LibCST so that comments and formatting survive.

- :func:`migrate` rewrites a source tree into ``<out>/<name>_msft/`` (``_msft_multi`` with the
  distributed option) and writes the reports ``change_list.csv``, ``unsupported_api.csv``,
  ``unknown_api.csv``, ``api_precision_advice.csv``, ``api_performance_advice.csv``,
  ``cuda_op_list.csv`` and the log ``msFmkTranspltlog.txt``.
- :func:`analyse` writes the reports of one analysis mode into ``<out>/<name>_analysis/``.

The command line is ``npusim migrate`` / ``npusim analyse`` (:mod:`npusim.migration.commands`; the work is in :mod:`~npusim.migration.migrator` and :mod:`~npusim.migration.analysis`).
"""

__all__ = ["migrate", "analyse"]


def __getattr__(name: str):
    # Loaded on first use: the `npusim` command builds its parser from this package, and
    # `npusim run` must not pay for (or need) LibCST.
    if name == "migrate":
        from npusim.migration.migrator import migrate

        return migrate
    if name == "analyse":
        from npusim.migration.analysis import analyse

        return analyse
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
