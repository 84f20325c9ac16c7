"""Migration tests (``npusim migrate`` / ``analyse``, transfer_to_npu from the command line).
Helpers live in :mod:`migration_helpers` (a conftest module
name is shared by every test folder, so tests import nothing from here).
"""

from __future__ import annotations
