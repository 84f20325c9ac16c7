"""The HTML report: `npusim run --report` and `npusim report`, self-contained (no network), with
its sections and the advisor's findings; rendered by headless Chromium without console errors and
with the axes its charts need, read from the rendered figures (skipped when the Debian package
`chromium` is not installed)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON = Path(__file__).resolve().parents[2] / "python"

PROGRAM = """\
import torch
weights = torch.randn(16, 8, device="npu", requires_grad=True)
optimizer = torch.optim.SGD([weights], lr=0.1)
ids = torch.randint(0, 100, (64,), device="npu")
for step in range(3):
    scores = torch.randn(4 + step, 16, device="npu") @ weights
    smooth = torch.logcumsumexp(scores, dim=1)
    ordered, _ = torch.sort(ids)
    loss = smooth.mean()
    loss.backward()
    optimizer.step()
    print(loss.item())
"""


pytest.importorskip("plotly", reason="the report's charts need plotly (scripts/setup.sh installs it)")


def _env():
    env = dict(os.environ)
    if any((PYTHON / "npusim").glob("_C*.so")):  # the checkout's build, as conftest.py picks it
        env["PYTHONPATH"] = str(PYTHON) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    program = folder / "train.py"
    program.write_text(PROGRAM)
    output = folder / "report.html"
    run = subprocess.run([sys.executable, "-m", "npusim", "run", "--no-summary", "--report", str(output),
                          str(program)], capture_output=True, text=True, timeout=120, env=_env(), cwd=folder)
    assert run.returncode == 0, run.stderr[-3000:]
    data_dir = re.search(r"profile data: (\S+)\)", run.stderr).group(1)
    return output, data_dir, program


def test_report_is_self_contained_with_sections(report):
    text = report[0].read_text()
    assert not re.search(r"<script[^>]+src=", text), "the report must not load scripts from elsewhere"
    assert "Plotly.newPlot" in text
    for section in ("Advisor", "Step timeline", "Time breakdown", "Top operators", "Placement", "Sync points",
                    "Memory"):
        assert f"<h2>{section}" in text


def test_report_findings_and_source_lines(report):
    text = report[0].read_text()
    program = str(report[2])
    assert "CPU fallbacks in the loop" in text and "logcumsumexp" in text
    assert "Operators on the AI CPU" in text and "int64 indices" in text
    assert ".item() every step" in text
    assert "Dynamic shapes" in text
    assert f"{program}:7" in text  # the fallback's source line
    assert f"{program}:12" in text  # the .item() sync


def test_report_subcommand(report, tmp_path):
    output = tmp_path / "again.html"
    run = subprocess.run([sys.executable, "-m", "npusim", "report", report[1], "-o", str(output)],
                         capture_output=True, text=True, timeout=120, env=_env())
    assert run.returncode == 0, run.stderr[-2000:]
    assert "<h2>Advisor" in output.read_text()
    bad = subprocess.run([sys.executable, "-m", "npusim", "report", str(tmp_path)], capture_output=True, text=True,
                         timeout=120, env=_env())
    assert bad.returncode != 0 and "trace_view.json" in bad.stderr


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _console_errors(browser: str, page: Path, screenshot: Path) -> list[str]:
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                          "--virtual-time-budget=5000", "--window-size=1280,2400", f"--screenshot={screenshot}",
                          page.as_uri()], capture_output=True, text=True, timeout=90)
    return [line for line in run.stderr.splitlines() if "CONSOLE" in line and
            ("Uncaught" in line or ":ERROR:" in line or "Error" in line)]


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium (Debian package chromium) is not installed")
def test_report_renders_in_chromium(report, tmp_path):
    browser = _chromium()
    shot = Path(os.environ.get("NPUSIM_REPORT_SCREENSHOT", tmp_path / "report.png"))
    assert _console_errors(browser, report[0], shot) == []
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                          "--dump-dom", report[0].as_uri()], capture_output=True, text=True, timeout=90).stdout
    assert dom.count('class="main-svg"') >= 3  # plotly drew the charts
    # The check sees console errors: a broken page is caught.
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    assert _console_errors(browser, broken, tmp_path / "broken.png")


# Appended to a copy of the page: once plotly has drawn, writes each figure's title, axes (type and
# range as rendered) and pie values into the document, which --dump-dom then returns.
_AXES_PROBE = """
<script>
window.addEventListener("load", () => setTimeout(() => {
  const figures = [];
  document.querySelectorAll(".js-plotly-plot").forEach((gd) => {
    const layout = gd._fullLayout;
    figures.push({
      title: (layout.title && layout.title.text) || "",
      x: layout.xaxis ? {type: layout.xaxis.type, range: layout.xaxis.range, title: layout.xaxis.title.text} : null,
      y: layout.yaxis ? {type: layout.yaxis.type, range: layout.yaxis.range} : null,
      pie: gd.data.filter((t) => t.type === "pie").map((t) => ({labels: t.labels, values: t.values})),
      shapes: (layout.shapes || []).length,
    });
  });
  const out = document.createElement("pre");
  out.id = "npusim-axes";
  out.textContent = JSON.stringify(figures);
  document.body.appendChild(out);
}, 300));
</script>
"""


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium (Debian package chromium) is not installed")
def test_report_charts_have_readable_axes(report, tmp_path):
    probe = tmp_path / "probed.html"
    probe.write_text(report[0].read_text().replace("</body>", _AXES_PROBE + "</body>"))
    dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=90).stdout
    found = re.search(r'<pre id="npusim-axes">(.*?)</pre>', dom, re.S)
    assert found, "the probe found no rendered figures"
    figures = {f["title"].split("<br>")[0]: f for f in json.loads(html.unescape(found.group(1)))}
    timeline = figures["Device timeline per stream (simulated us)"]
    memory = figures["Device memory over the profile"]
    breakdown = figures["Where the device time went (us)"]
    # Memory: linear MiB from zero, on the same simulated-time axis as the timeline above it.
    assert memory["y"]["type"] == "linear"
    low, high = memory["y"]["range"]
    assert low == 0 and 0 < high < 1024  # this program's peak is a few KiB: the axis fits the data
    assert memory["x"]["title"] == timeline["x"]["title"] == "simulated device time (us)"
    assert memory["x"]["range"] == timeline["x"]["range"] and memory["x"]["range"][0] == 0
    assert "device capacity" in report[0].read_text()  # stated, far above the curve
    # Three optimizer steps: their boundaries are marked on both charts.
    assert timeline["shapes"] >= 3 and memory["shapes"] >= 3
    # No empty slices (their "0%" labels used to stack on each other).
    pie = breakdown["pie"][0]
    assert pie["values"] and all(value > 0 for value in pie["values"])
