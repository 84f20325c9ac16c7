"""Precision triage as msprobe (MindStudio Probe) does it, on the simulated NPU.

``npusim compare SCRIPT`` runs a program twice, on the simulated NPU with its numerics (torch_npu's
autocast lists, HF32, saturation mode, torch_npu's fused kernels, the float64 rule) and on the CPU
as an fp32 benchmark with the same seeds and data; dumps every API call and module in msprobe's
layout; writes msprobe's compare table; names, for each diverging operator, the npusim numerics
rule that makes the difference; and draws an HTML page.

The files, one concern each:

- :mod:`.api_catalog`: which torch / Tensor / functional / torch_npu calls are dumped and their
  msprobe names (``Functional.linear``, ``Tensor.add``, ``Torch.matmul``, ``NPU.npu_rms_norm``);
- :mod:`.dump_config`: msprobe's ``config.json`` (task, level, step, rank, scope, list, ...);
- :mod:`.tensor_summary`: a value's dump.json record (msprobe's statistics of a tensor);
- :mod:`.dump_writer`: ``dump.json`` / ``stack.json`` / ``construct.json`` / tensor files;
- :mod:`.hooks`: the API, module and backward hooks and the dump session (start/stop/step);
- :mod:`.bench_device`: the benchmark run's mapping of the npu device to the CPU;
- :mod:`.composites`: fp32 composites of torch_npu's fused operators (the CPU benchmark);
- :mod:`.loss_recorder`: the loss of every step, from ``backward()`` calls;
- :mod:`.runner`: one run of the program in a subprocess, dumping as configured;
- :mod:`.metrics`, :mod:`.verdict`, :mod:`.compare_table`: msprobe's compare (rows, metrics,
  pass/warning/error, CSV and XLSX);
- :mod:`.explain`: re-runs of a diverging operator with each numerics rule switched off;
- :mod:`.report`: the HTML page; :mod:`.command`: the ``npusim compare`` command.

``import msprobe`` (``from msprobe.pytorch import PrecisionDebugger``) is served from
``_msprobe/`` where no real msprobe is installed (:func:`install`).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

__all__ = ["install", "MSPROBE_FACE_DIRECTORY"]

MSPROBE_FACE_DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_msprobe")


class _MsprobeFinder:
    """Serves ``msprobe`` from npusim; last on ``sys.meta_path`` so that a real msprobe on
    ``sys.path`` is always found first (the finders before it answer first)."""

    _npusim_msprobe_finder = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "msprobe" or path is not None:
            return None
        return importlib.util.spec_from_file_location(
            "msprobe", os.path.join(MSPROBE_FACE_DIRECTORY, "__init__.py"),
            submodule_search_locations=[MSPROBE_FACE_DIRECTORY],
        )


def install() -> None:
    """Serve ``import msprobe`` where no real msprobe is installed (run when npusim loads)."""
    if any(getattr(finder, "_npusim_msprobe_finder", False) for finder in sys.meta_path):
        return
    sys.meta_path.append(_MsprobeFinder())
