"""Distributed tests (hccl backend): multi-process jobs with timeouts.
Helpers live in :mod:`dist_harness` (a conftest module name
is shared by every test folder, so tests import nothing from here).
"""

from __future__ import annotations
