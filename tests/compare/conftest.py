"""Tests of ``npusim compare`` and npusim's msprobe (python/npusim/compare)."""
