#!/usr/bin/env python3
"""Checks the floors of npusim's C++ tree (DESIGN.md): every `#include "x/y.h"` of
a project header must point to a floor below the including file's (or its own
folder). Prints a summary and every violation; exits 1 when there is one.

Floors, bottom first. A folder may include its own files and every folder of a
lower floor; folders on one floor (the concern folders above the backend) may
not include each other.
"""
from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "csrc"

# (floor number, folder relative to csrc). Lower numbers are lower floors.
FLOORS: list[tuple[int, str]] = [
    (0, "runtime"),             # the simulated CANN runtime: no torch
    (1, "perf"),                # chip specs and cost model: no torch
    (1, "tools"),               # npu-smi and the doctor's native checks: no torch
    (2, "acl/runtime"),         # AscendCL C API over the runtime: no torch
    (10, "backend/device"),     # allocator adapter, guard, streams, generator, pinned memory, CPU aliases
    (11, "backend/timing"),     # pricing, placement, records, L2, core limits, sync points, estimate mode
    (12, "backend/numerics"),   # HF32 rounding, inf/nan mode, autocast, loss precision
    (13, "backend/layouts"),    # sparse, quantized, memory formats, storage resize
    (14, "backend/executor"),   # the operator executor, native ops, copies, hooks
    (15, "backend/families"),   # operator families: attention, convolution, recurrent cells, optimizer meta
    (16, "backend/python"),     # the _C extension's bindings
    (20, "ops"),                # torch.ops.npu: torch_npu's own operators
    (20, "distributed"),        # the hccl c10d backend
    (20, "profiler"),           # device activity for torch.profiler
    (20, "compile"),            # inductor and NPUGraph support
    (30, "acl/aclnn"),          # aclnn operators over ops and the backend
]
# Layers that must build without PyTorch.
TORCH_FREE = ("runtime", "perf", "tools", "acl/runtime")
TORCH_HEADER = re.compile(r'#\s*include\s*[<"](ATen/|c10/|torch/|pybind11/)')
PROJECT_INCLUDE = re.compile(r'#\s*include\s*"([a-z_]+(?:/[a-z_]+)*)/[A-Za-z0-9_]+\.h"')


def folder_of(relative: str) -> tuple[int, str] | None:
    """The (floor, folder) a path under csrc belongs to: the longest matching folder."""
    best = None
    for floor, folder in FLOORS:
        if relative == folder or relative.startswith(folder + "/"):
            if best is None or len(folder) > len(best[1]):
                best = (floor, folder)
    return best


def main() -> int:
    files = sorted(p for p in ROOT.rglob("*") if p.suffix in (".h", ".cpp", ".c", ".cc"))
    violations: list[str] = []
    edges = 0
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        if "/tests/" in f"/{relative}" or relative.startswith("acl/toolkit/"):
            continue  # tests may reach every layer they test; the toolkit headers are the public face
        home = folder_of(relative)
        if home is None:
            violations.append(f"{relative}: in no floor of scripts/check_cxx_layers.py")
            continue
        text = path.read_text(errors="replace")
        for line_number, line in enumerate(text.splitlines(), 1):
            if home[1] in TORCH_FREE and TORCH_HEADER.search(line):
                violations.append(f"{relative}:{line_number}: {home[1]} must build without torch: {line.strip()}")
            match = PROJECT_INCLUDE.search(line)
            if not match:
                continue
            target = folder_of(match.group(1))
            if target is None:
                continue  # a header beside the file or a system-style path
            edges += 1
            if target[1] == home[1] or home[1].startswith(target[1] + "/"):
                continue
            if target[0] >= home[0]:
                violations.append(f"{relative}:{line_number}: {home[1]} (floor {home[0]}) includes "
                                  f"{target[1]} (floor {target[0]}): {line.strip()}")
    print(f"C++ layers: {len(files)} files, {edges} project includes, {len(FLOORS)} folders, "
          f"{len(violations)} violations")
    for violation in violations:
        print("  " + violation)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
