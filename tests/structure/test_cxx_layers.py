"""The C++ tree keeps its floors (DESIGN.md): no include from a lower floor to a higher one, no
include between the concern folders on one floor, and no PyTorch header in the layers that must
build without it. The rules and the floor table are in scripts/check_cxx_layers.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECKER = Path(__file__).resolve().parents[2] / "scripts" / "check_cxx_layers.py"


def test_cxx_includes_respect_the_floors():
    done = subprocess.run([sys.executable, str(CHECKER)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 violations" in done.stdout
