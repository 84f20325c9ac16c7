"""npusim reports each pitfall of the Ascend migration literature exactly where it is.

Each program in this directory marks the line of its pitfall with ``# PITFALL <kind> <what>``:
``cpu_fallback <op>`` (a CPU fallback first hit there), ``sync <what>`` (a synchronization point
there), ``ai_cpu <op>`` (calls placed on the AI CPU) or ``dtype <name>`` (the dtype a cast gives).
"""

import pathlib
import re
import runpy
import warnings

import pytest
import torch

import npusim

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("test_"))
MARKER = re.compile(r"#\s*PITFALL\s+(\w+)\s+(.+?)\s*$")


def markers(program: pathlib.Path):
    for number, line in enumerate(program.read_text().splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            yield number, match.group(1), match.group(2)


def run(program: pathlib.Path):
    npusim.reset_placement_report()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = runpy.run_path(str(program), run_name="__main__")
    return npusim.placement_report(), [str(w.message) for w in caught], namespace


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_pitfall_is_reported_where_it_is(program):
    report, warning_texts, _ = run(program)
    found = list(markers(program))
    assert found, f"{program.name} marks no pitfall"
    for line, kind, what in found:
        location = f"{program}:{line}"
        if kind == "cpu_fallback":
            fallbacks = {f["operator"]: f for f in report["fallbacks"]}
            assert what in fallbacks, report["fallbacks"]
            assert fallbacks[what]["first_source"] == location
        elif kind == "sync":
            sources = {(s["what"], s["source"]) for s in report["sync_points"]}
            assert (what, location) in sources, report["sync_points"]
        elif kind == "ai_cpu":
            assert report["operators"][what]["ai_cpu"] > 0, report["operators"].get(what)
        elif kind == "dtype":
            assert _cast_warning_in_fresh_process(program)
        else:
            pytest.fail(f"unknown pitfall kind {kind}")


def _cast_warning_in_fresh_process(program: pathlib.Path) -> bool:
    # The float64 warning is once per process, as torch_npu's: check it where nothing ran before.
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", f"import torch, npusim, runpy; runpy.run_path({str(program)!r})"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return "Device do not support double dtype now, dtype cast replace with float." in result.stderr


def test_fallback_warning_text_is_torch_npus():
    program = HERE / "unsupported_operator.py"
    report, warning_texts, _ = run(program)
    expected = (
        "CAUTION: The operator 'aten::_logcumsumexp' is not currently supported on the NPU backend and will "
        "fall back to run on the CPU. This may have performance implications."
    )
    # Once per operator per process: present here unless an earlier test already triggered it.
    assert all("CAUTION" not in t or t == expected for t in warning_texts)
    assert report["by_placement"]["cpu_fallback"] >= 3
