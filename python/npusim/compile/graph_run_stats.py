"""Counts of the NPUGraph runs of reduce-overhead and the npugraphs backends since the last
reset: graphs captured, replays, warm-up runs, and runs without a graph (the graph's outputs
were still in use, or the function may not be graphed), for the compile report and tests.
Kept apart so that the graph trees and the per-graph path share them without importing each
other."""

stats = {"captured": 0, "replayed": 0, "warmups": 0, "eager": 0}


def reset_stats() -> None:
    for key in stats:
        stats[key] = 0
