"""``msprobe`` (MindStudio Probe) served by npusim, only where no real msprobe is installed.

A training script instrumented for msprobe (``from msprobe.pytorch import PrecisionDebugger``)
dumps on the simulated NPU unchanged: npusim's :mod:`npusim.compare` writes msprobe's dump
layout and reads msprobe's ``config.json``. See :mod:`msprobe.pytorch` for what is covered.
"""

__version__ = "26.0.0+npusim"
