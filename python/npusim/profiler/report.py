"""The HTML report: one self-contained file (plotly's offline bundle inlined, no network) with the
step timeline per stream, the time breakdown, top operators, placement with fallbacks and AI CPU
operators and their source lines, sync points, the memory curve with peak and capacity, and the
advisor's findings with their fixes. Made from a ``*_ascend_pt`` folder."""

from __future__ import annotations

import html
import json
import os
import tempfile

from npusim._sync_labels import NPUSIM_OWN

from ._advisor import findings, user_frame
from ._trace import Trace

_UNITS = ["Cube", "Vector", "AI CPU", "CPU fallback", "Transfer", "Communication"]


class _SimulatedClock:
    """Maps a host timestamp of the trace to the simulated device time of the timeline: a moment
    on the host lies where the next device task it launches starts (or, past the last launch,
    where the device finished). Memory events and step marks are host-side; the charts show them
    on the device's time axis, the axis of the step timeline."""

    def __init__(self, tasks):
        launches = sorted(((t.op.ts if t.op is not None else t.ts), t.sim_start, t.sim_start + t.dur) for t in tasks)
        self._hosts = [host for host, _, _ in launches]
        self._starts = []
        latest = 0.0
        for _, start, _ in launches:  # simulated time only moves forward
            latest = max(latest, start)
            self._starts.append(latest)
        self._end = max((end for _, _, end in launches), default=0.0)

    def __call__(self, host_ts: float) -> float:
        import bisect

        index = bisect.bisect_left(self._hosts, host_ts)
        return self._starts[index] if index < len(self._starts) else self._end


def _step_marks(trace: Trace, clock: _SimulatedClock) -> list[tuple[float, str]]:
    """(simulated time, label) of each step's end, when the program marks steps."""
    return [(clock(step.ts + step.dur), f"step {i + 1}") for i, step in enumerate(trace.steps)]


def _add_step_marks(figure, marks) -> None:
    for time_us, label in marks:
        figure.add_vline(x=time_us, line_dash="dash", line_color="#888", line_width=1,
                         annotation_text=label, annotation_position="top", annotation_font_size=10)


def _figures(trace: Trace, capacity: int | None):
    import plotly.graph_objects as go

    figs = {}
    clock = _SimulatedClock(trace.tasks)
    marks = _step_marks(trace, clock)
    # Step timeline per stream, in simulated device time (zoomable).
    colors = {"AI_CORE": "#1f77b4", "AI_VECTOR_CORE": "#2ca02c", "AI_CPU": "#ff7f0e", "CPU_FALLBACK": "#d62728",
              "DMA": "#9467bd", "COMMUNICATION": "#8c564b"}
    timeline = go.Figure()
    for core, color in colors.items():
        tasks = [t for t in trace.tasks if t.core == core]
        if not tasks:
            continue
        timeline.add_trace(go.Bar(
            base=[t.sim_start for t in tasks], x=[max(t.dur, 0.001) for t in tasks],
            y=[f"npu:{t.device} stream {t.stream}" for t in tasks], orientation="h", name=core,
            marker_color=color, hovertext=[f"{t.name} ({t.op.name if t.op else ''}) {t.dur:.2f} us" for t in tasks]))
    _add_step_marks(timeline, marks)
    timeline.update_layout(barmode="overlay", title="Device timeline per stream (simulated us)", height=320,
                           xaxis_title="simulated device time (us)")
    figs["timeline"] = timeline

    # Time breakdown: units that took no time are left out (their labels would stack at 0%).
    by_unit = {u: 0.0 for u in _UNITS}
    for t in trace.tasks:
        by_unit[t.unit if t.unit in by_unit else "Vector"] += t.dur
    span = 0.0
    if trace.tasks:
        span = max(t.sim_start + t.dur for t in trace.tasks) - min(t.sim_start for t in trace.tasks)
    slices = [(u, by_unit[u]) for u in _UNITS] + [("Host-bound idle", max(0.0, span - sum(by_unit.values())))]
    slices = [(label, value) for label, value in slices if value > 0]
    figs["breakdown"] = go.Figure(go.Pie(labels=[label for label, _ in slices], values=[v for _, v in slices],
                                         hole=0.4, sort=False))
    figs["breakdown"].update_layout(title="Where the device time went (us)", height=360)

    # Memory: allocated and reserved MiB on a linear axis, against the device time of the
    # timeline above, with the peak and the device's capacity marked.
    mem = go.Figure()
    samples = sorted(trace.memory, key=lambda m: m["ts"])
    top = 1.0
    if samples:
        xs = [clock(m["ts"]) for m in samples]
        allocated = [m["allocated"] / 2**20 for m in samples]
        reserved = [m["reserved"] / 2**20 for m in samples]
        mem.add_trace(go.Scatter(x=xs, y=allocated, name="allocated (MiB)", mode="lines", line_shape="hv"))
        mem.add_trace(go.Scatter(x=xs, y=reserved, name="reserved (MiB)", mode="lines", line_shape="hv"))
        peak_index = max(range(len(allocated)), key=allocated.__getitem__)
        mem.add_trace(go.Scatter(x=[xs[peak_index]], y=[allocated[peak_index]], mode="markers+text",
                                 name="peak allocated", text=[f"peak {allocated[peak_index]:.1f} MiB"],
                                 textposition="top center", marker={"size": 9, "color": "#d62728"}))
        top = max(max(reserved), max(allocated), 1.0)
    capacity_mib = capacity / 2**20 if capacity else None
    title = "Device memory over the profile"
    if capacity_mib and capacity_mib <= 4 * top:
        # The capacity is near the data: draw it as a line on the same scale.
        mem.add_hline(y=capacity_mib, line_color="red", annotation_text=f"capacity {capacity / 2**30:.1f} GiB")
        top = max(top, capacity_mib)
    elif capacity_mib:
        # Far above the data: a line there would flatten the curves; say it instead.
        title += (f"<br><sup>device capacity {capacity / 2**30:.1f} GiB, off the scale: the peak reserved is "
                  f"{100 * top / capacity_mib:.2g}% of it</sup>")
    _add_step_marks(mem, marks)
    mem.update_layout(title=title, xaxis_title="simulated device time (us)",
                      yaxis_title="MiB", yaxis_type="linear", yaxis_range=[0, top * 1.15], height=340)
    if trace.tasks:
        mem.update_xaxes(range=[0, clock._end])
        timeline.update_xaxes(range=[0, clock._end])
    figs["memory"] = mem
    return figs


def html_table(header, rows) -> str:
    """An HTML table in the report's style (every cell escaped)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_table = html_table


def html_page(title: str, body: str) -> str:
    """A self-contained report page: plotly's bundle inlined (no network), the report's style.
    Other npusim reports (npusim compare) build their pages with it."""
    import plotly.offline

    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}} .finding{{border-left:5px solid #f0ad4e;
padding:0 1em;margin:1em 0;background:#fafafa}} .finding.high{{border-color:#d9534f}}</style></head><body>
<h1>{html.escape(title)}</h1>
{body}
</body></html>
"""


def build_report(profile_dir: str, output: str) -> str:
    """Writes the HTML report of the ``*_ascend_pt`` folder ``profile_dir`` to ``output``."""
    try:
        import plotly
        import plotly.offline
    except ImportError as error:
        raise ImportError("the npusim report draws its charts with plotly: pip install plotly") from error

    trace_path = os.path.join(profile_dir, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    if not os.path.isfile(trace_path):
        raise FileNotFoundError(f"{trace_path} not found: give a *_ascend_pt folder written by npusim")
    trace = Trace.load(trace_path)
    meta = {}
    meta_path = os.path.join(profile_dir, "profiler_metadata.json")
    if os.path.isfile(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    capacity = meta.get("device_capacity_bytes")
    figs = _figures(trace, capacity)
    parts = {k: f.to_html(full_html=False, include_plotlyjs=False, config={"responsive": True})
             for k, f in figs.items()}

    ops: dict = {}
    for t in trace.tasks:
        key = t.op.name if t.op else t.name
        entry = ops.setdefault(key, [0, 0.0, t.core])
        entry[0] += 1
        entry[1] += t.dur
    top = sorted(ops.items(), key=lambda kv: -kv[1][1])[:20]
    top_rows = [[n, c, f"{d:.2f}", core] for n, (c, d, core) in top]
    placement_rows = []
    seen = set()
    for t in trace.tasks:
        if t.core in ("AI_CPU", "CPU_FALLBACK"):
            key = (t.op.name if t.op else t.name, t.core, t.source or user_frame(trace, t.op))
            if key not in seen:
                seen.add(key)
                placement_rows.append(list(key))
    sync_counts: dict = {}
    for s in trace.syncs:
        if s["cause"].startswith(NPUSIM_OWN):
            continue  # npusim's own (the profiler's exit under `npusim run --report`), not the program's
        sync_counts[(s["cause"], s["source"])] = sync_counts.get((s["cause"], s["source"]), 0) + 1
    sync_rows = [[c, s or "(no user frame: called from torch or npusim)", n] for (c, s), n in sorted(sync_counts.items(), key=lambda kv: -kv[1])]
    advice = findings(trace, len(trace.steps))
    advice_html = "".join(
        f"<div class='finding {a['severity']}'><h3>{html.escape(a['title'])}</h3><p>{html.escape(a['text'])}</p>"
        f"<p><b>Fix:</b> {html.escape(a['fix'])}</p></div>" for a in advice) or "<p>No problems found.</p>"

    body = f"""<p>Profile: {html.escape(os.path.basename(os.path.abspath(profile_dir)))} &middot; {len(trace.tasks)} device tasks,
{len(trace.steps) or 1} step(s). Device times are npusim's model of the chip ({html.escape(str(meta.get('chip', 'Ascend 910B')))}).</p>
<h2>Advisor</h2>{advice_html}
<h2>Step timeline</h2>{parts['timeline']}
<h2>Time breakdown</h2>{parts['breakdown']}
<h2>Top operators (device time)</h2>{_table(['Operator', 'Calls', 'Device time (us)', 'Core'], top_rows)}
<h2>Placement: AI CPU operators and CPU fallbacks</h2>
{_table(['Operator', 'Placement', 'Source line'], placement_rows) if placement_rows else '<p>Every operator ran on the AI Core.</p>'}
<h2>Sync points</h2>
{_table(['Cause', 'Source line', 'Count'], sync_rows) if sync_rows else '<p>No host-device synchronization.</p>'}
<h2>Memory</h2>{parts['memory']}"""
    page = html_page("npusim profile report", body)
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    return output


def run_profiled(runner, output: str) -> int:
    """Runs ``runner()`` under the profiler (CPU and npu, memory, stacks), then writes the report."""
    import torch

    from . import ProfilerActivity, export_ascend, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.NPU], record_shapes=True, profile_memory=True,
                 with_stack=True) as prof:
        exit_code = runner()
    root = os.path.join(tempfile.mkdtemp(prefix="npusim-report-"), "npusim_report_ascend_pt")
    export_ascend(prof, root)
    build_report(root, output)
    import sys

    print(f"[npusim] report: {output} (profile data: {root})", file=sys.stderr)
    del torch
    return exit_code
