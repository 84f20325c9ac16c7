"""The HTML page of ``npusim compare``, in the style of npusim's profile report (its page shell
and tables, :func:`npusim.profiler.report.html_page`): the verdict, the first diverging operator
with its source line and the rule that causes it, the loss curves of both runs, the diverging
operators with their explanations, and the layers ranked by how far their outputs drift.
"""

from __future__ import annotations

import html
from typing import Any

from .divergence import CallDivergence, ranked_modules
from .explain import RULES, Explanation

__all__ = ["build_page"]


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:.3g}"


def _loss_figure(npu_losses: list[dict], bench_losses: list[dict]) -> str:
    import plotly.graph_objects as go

    figure = go.Figure()
    curves = {}
    for label, points, dash in (("simulated NPU", npu_losses, "solid"), ("CPU fp32 benchmark", bench_losses, "dot")):
        numeric = [point for point in points if isinstance(point.get("loss"), (int, float))]
        curves[label] = {point["index"]: point["loss"] for point in numeric}
        figure.add_trace(go.Scatter(x=[point["index"] for point in numeric], y=[point["loss"] for point in numeric],
                                    mode="lines+markers", name=label, line={"dash": dash},
                                    hovertext=[f"step {point['step']}" for point in numeric]))
    common = sorted(set(curves["simulated NPU"]) & set(curves["CPU fp32 benchmark"]))
    if common:
        # The two curves often lie within a line width of each other: their difference has its own axis.
        figure.add_trace(go.Bar(x=common, y=[curves["simulated NPU"][i] - curves["CPU fp32 benchmark"][i] for i in common],
                                name="NPU - benchmark", yaxis="y2", opacity=0.35))
    figure.update_layout(title="Loss of each backward() call", xaxis_title="backward() call", yaxis_title="loss",
                         yaxis2={"title": "NPU - benchmark", "overlaying": "y", "side": "right", "showgrid": False},
                         height=360, legend={"orientation": "h", "y": -0.25})
    return figure.to_html(full_html=False, include_plotlyjs=False, config={"responsive": True})


def _cause(explanation: Explanation | None) -> str:
    if explanation is None:
        return "-"
    return RULES.get(explanation.verdict, explanation.verdict)


def build_page(summary: dict[str, Any], calls: list[CallDivergence], first: CallDivergence | None,
               explanations: list[Explanation], npu_losses: list[dict], bench_losses: list[dict]) -> str:
    from npusim.profiler.report import html_page, html_table

    by_entry = {explanation.entry: explanation for explanation in explanations}
    diverging = [call for call in calls if call.diverging]
    parts = []
    verdict = summary["verdict"]
    parts.append(f"<div class='finding {'high' if diverging else ''}'><h3>{html.escape(verdict)}</h3>"
                 f"<p>{html.escape(summary['description'])}</p></div>")
    parts.append(html_table(["Run", ""], [[key, value] for key, value in summary["facts"]]))

    parts.append("<h2>First diverging operator</h2>")
    if first is None:
        causes = [explanation for explanation in explanations if explanation.verdict != "inherited"]
        parts.append("<p>No operator goes beyond msprobe's thresholds.</p>")
        if causes:
            parts.append(html_table(["Call with a small difference", "Cause", "Explanation"],
                                    [[e.entry, _cause(e), e.text] for e in causes]))
    else:
        explanation = by_entry.get(first.entry)
        parts.append(f"<div class='finding high'><h3>{html.escape(first.entry)}</h3>"
                     f"<p><b>Source:</b> {html.escape(first.source or 'no user frame (called from torch)')}</p>"
                     f"<p><b>Why it is flagged:</b> {html.escape('; '.join(first.reasons))}</p>"
                     f"<p><b>Cause:</b> {html.escape(explanation.text if explanation else 'not re-run')}</p></div>")

    parts.append("<h2>Loss curves</h2>")
    if npu_losses or bench_losses:
        parts.append(_loss_figure(npu_losses, bench_losses))
    else:
        parts.append("<p>The program called no scalar backward(): no loss to draw.</p>")

    parts.append(f"<h2>Diverging operators ({len(diverging)})</h2>")
    rows = []
    for call in diverging[:200]:
        explanation = by_entry.get(call.entry)
        rows.append([call.entry, call.source or "-", _number(call.input_error), _number(call.output_error),
                     call.result, _cause(explanation), explanation.text if explanation else "; ".join(call.reasons)])
    parts.append(html_table(["Call", "Source line", "Input difference", "Output difference", "msprobe Result",
                             "Cause", "Explanation"], rows) if rows else "<p>None.</p>")

    parts.append("<h2>Layers ranked by divergence</h2>")
    modules = ranked_modules(calls)
    module_rows = []
    for call in modules:
        growth = None
        if call.input_error and call.output_error is not None:
            growth = call.output_error / call.input_error
        module_rows.append([call.entry, _number(call.output_error), _number(call.input_error),
                            _number(growth) if growth is not None else ("new" if call.output_error else "-"),
                            "yes" if call.exact else "no"])
    parts.append(html_table(["Module (forward)", "Output difference", "Input difference", "Growth (out / in)",
                             "Bit for bit"], module_rows) if module_rows else "<p>No module was dumped.</p>")

    if explanations:
        parts.append("<h2>Re-runs of the diverging operators</h2>")
        variant_rows = []
        for explanation in explanations:
            for variant, result in explanation.variants.items():
                if result.get("error"):
                    state = result["error"]
                elif result.get("exact"):
                    state = "bit for bit"
                else:
                    state = f"relative difference {_number(result.get('relative'))}"
                variant_rows.append([explanation.entry, variant, state])
        parts.append("<p>Each operator is called again from the benchmark's inputs: with the NPU's rules, with "
                     "each rule off, and with all of them off (on the CPU).</p>")
        parts.append(html_table(["Call", "Variant", "Against the benchmark's output"], variant_rows))
    parts.append(f"<p>Compare tables: {html.escape(', '.join(summary.get('tables', [])))}</p>")
    return html_page("npusim compare report", "\n".join(parts))
