"""Mixed-precision tests (autocast, GradScaler, INF_NAN mode).
Helpers live in :mod:`amp_subprocess` (a conftest module name
is shared by every test folder, so tests import nothing from here).
"""

from __future__ import annotations
