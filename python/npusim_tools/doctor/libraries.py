"""Which copy of the CANN libraries the dynamic linker would load, and whether a stale toolkit
shadows the sourced one. The resolution itself (RPATH/RUNPATH, LD_LIBRARY_PATH, the ld.so
cache, default directories, ELF class and SONAME) is done by npusim-inspect (csrc/tools)."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from npusim_tools.doctor.known_messages import KNOWN_MESSAGES
from npusim_tools.doctor.report import FAIL, PASS, WARN, Check
from npusim_tools.native import InspectError, inspect

__all__ = ["TOOLKIT_LIBRARIES", "DRIVER_LIBRARIES", "check_libraries"]

SECTION = "shared libraries"
# Loaded by torch_npu from the toolkit's lib64 (the first three are the ones §17's messages name).
TOOLKIT_LIBRARIES = ("libascendcl.so", "libhccl.so", "libruntime.so", "libge_runner.so", "libgraph.so", "libopapi.so")
# Loaded from the driver.
DRIVER_LIBRARIES = ("libascend_hal.so",)


def _describe(candidate: dict[str, Any]) -> str:
    where = candidate["source"]
    if candidate["source"] in ("LD_LIBRARY_PATH", "RPATH", "RUNPATH"):
        where += f" entry {candidate['position']} ({candidate['source_entry'] or '<empty: current directory>'})"
    text = f"{candidate['status']:8} {candidate['path']}"
    if candidate.get("real_path") and candidate["real_path"] != candidate["path"]:
        text += f" -> {candidate['real_path']}"
    text += f"  [{where}]"
    elf = candidate.get("elf") or {}
    if elf.get("valid"):
        text += f" ELF{elf['class']} {elf['machine']}" + (f" SONAME {elf['soname']}" if elf.get("soname") else "")
    if candidate.get("reason"):
        text += f": {candidate['reason']}"
    return text


def check_libraries(
    env: Mapping[str, str],
    toolkit: str | None,
    driver_root: str | None,
    *,
    cache_path: str | None = None,
    default_dirs: Sequence[str] | None = None,
    requester: str | None = None,
) -> list[Check]:
    """``toolkit``: the real path of the toolkit the environment should use (ASCEND_HOME_PATH).
    ``cache_path`` / ``default_dirs`` replace the system's (tests use fixture trees)."""
    arguments = ["resolve"]
    if "LD_LIBRARY_PATH" in env:
        arguments += ["--ld-library-path", env["LD_LIBRARY_PATH"]]
    else:
        arguments += ["--no-ld-library-path"]
    if cache_path is not None:
        arguments += ["--cache", cache_path]
    if default_dirs is not None:
        arguments += ["--default-dirs", ":".join(default_dirs)]
    if requester:
        arguments += ["--requester", requester]
    names = list(TOOLKIT_LIBRARIES) + (list(DRIVER_LIBRARIES) if driver_root else [])
    try:
        result = inspect(arguments + names)
    except InspectError as error:
        return [Check(SECTION, "library resolution", FAIL, str(error), "rebuild npusim's native tools (scripts/dev-build.sh)")]

    expected_toolkit = os.path.join(toolkit, "lib64") if toolkit else None
    expected_driver = os.path.realpath(os.path.join(driver_root, "lib64")) if driver_root else None
    not_sourced = next(m for m in KNOWN_MESSAGES if m.key == "cann-not-sourced")
    checks = []
    for library in result["libraries"]:
        name = library["name"]
        expected = expected_driver if name in DRIVER_LIBRARIES else expected_toolkit
        candidates = library["candidates"]
        present = [c for c in candidates if c["status"] != "absent"]
        details = [_describe(c) for c in present] + list(library["notes"])
        if library["selected"] < 0:
            optional = name in ("libopapi.so", "libge_runner.so", "libgraph.so")
            status = WARN if optional else FAIL
            summary = f"not found by the dynamic linker: '{name}: cannot open shared object file: No such file or directory'"
            fix = not_sourced.fix
            if expected:
                in_toolkit = os.path.exists(os.path.join(expected, name))
                summary += f" ({'it is in ' + expected + ', which LD_LIBRARY_PATH lacks' if in_toolkit else 'not in ' + expected + ' either'})"
                if not in_toolkit:
                    fix = f"{expected} has no {name}: install the complete package (toolkit or driver) of this release"
            checks.append(Check(SECTION, name, status, summary, fix, details=details))
            continue
        chosen = candidates[library["selected"]]
        chosen_real = chosen["real_path"] or chosen["path"]
        elf = chosen.get("elf") or {}
        soname_note = [n for n in library["notes"] if "SONAME" in n]
        if expected is None:
            checks.append(Check(SECTION, name, PASS if not soname_note else WARN,
                                f"{chosen['path']} (via {chosen['source']}); no toolkit to compare with", details=details))
            continue
        if os.path.dirname(chosen_real) == expected or chosen_real.startswith(expected + "/") or chosen["path"].startswith(expected + "/"):
            status = WARN if soname_note else PASS
            origin = "the driver" if name in DRIVER_LIBRARIES else "the sourced toolkit"
            checks.append(Check(SECTION, name, status, f"{chosen['path']} from {origin} (via {chosen['source']}, ELF{elf.get('class')})",
                                "the file's SONAME differs from its name: the toolkit is damaged, reinstall it", details=details))
            continue
        # The winner is not the sourced toolkit's copy.
        shadowed = [c for c in candidates if c["status"] == "shadowed" and
                    ((c["real_path"] or c["path"]).startswith(expected + "/") or c["path"].startswith(expected + "/"))]
        via = chosen["source"] + (f" entry {chosen['position']} ({chosen['source_entry']})" if chosen["source"] in ("LD_LIBRARY_PATH", "RPATH", "RUNPATH") else "")
        if shadowed:
            summary = (f"the linker loads {chosen['path']} (found first, via {via}), not the sourced toolkit's "
                       f"{shadowed[0]['path']}: another toolkit shadows the sourced one, so symbols and kernels of two CANN "
                       "releases mix (undefined symbol errors, wrong behaviour)")
            fix = (f"remove {chosen['source_entry']} from {chosen['source']}" if chosen["source"] == "LD_LIBRARY_PATH"
                   else f"remove {os.path.dirname(chosen['path'])} from the linker's search (its {chosen['source']})") + \
                  "; or start a fresh shell and source only the toolkit's set_env.sh"
            checks.append(Check(SECTION, name, FAIL, summary, fix, details=details))
        else:
            checks.append(Check(SECTION, name, WARN,
                                f"the linker loads {chosen['path']} (via {via}), which is outside the sourced toolkit {toolkit} "
                                "and the toolkit has no copy", "check that the toolkit is complete, or that this copy is the one you want",
                                details=details))
    return checks
