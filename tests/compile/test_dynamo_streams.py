"""torch.npu streams, events and device calls inside compiled regions: traced as Dynamo traces
their torch.cuda twins (no graph break), graph-broken only where CUDA breaks, and run right."""

import pytest
import torch
from torch._dynamo.utils import counters

import npusim  # noqa: F401


def fork_join(x):
    side = torch.npu.Stream()
    main = torch.npu.current_stream()
    side.wait_stream(main)
    with torch.npu.stream(side):
        y = x * 2
    main.wait_stream(side)
    return y + 1


def record_and_wait(x):
    done = torch.npu.Event()
    y = x * 2
    done.record()
    done.wait()
    return y + 1


def stream_record_event(x):
    stream = torch.npu.current_stream()
    marker = stream.record_event()
    y = x.sin()
    marker.wait(stream)
    return y


def synchronizing(x):
    y = x * 2
    torch.npu.synchronize()
    side = torch.npu.Stream()
    with torch.npu.stream(side):
        z = y.cos()
    side.synchronize()
    event = torch.npu.Event()
    event.record()
    event.synchronize()
    return z


def device_queries(x):
    with torch.npu.device(0):
        y = x + 1
    if torch.npu.is_available() and torch.npu.current_device() == 0 and torch.npu.get_device_properties(0).total_memory:
        y = y + 1
    return y * 2 + torch.npu.current_stream().npu_stream * 0


TRACED = [fork_join, record_and_wait, stream_record_event, synchronizing, device_queries]


def _explain(fn, x):
    torch._dynamo.reset()
    return torch._dynamo.explain(fn)(x)


@pytest.mark.parametrize("fn", TRACED, ids=lambda f: f.__name__)
def test_traced_without_graph_break(fn):
    x = torch.arange(8.0, device="npu")
    explanation = _explain(fn, x)
    assert explanation.graph_break_count == 0, [str(r.reason).splitlines()[0] for r in explanation.break_reasons]
    assert explanation.graph_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", TRACED, ids=lambda f: f.__name__)
def test_compiled_region_equals_eager(fn, backend):
    torch._dynamo.reset()
    counters.clear()
    x = torch.arange(8.0, device="npu")
    expected = fn(x)
    got = torch.compile(fn, backend=backend, fullgraph=True)(x)
    torch.testing.assert_close(got.cpu(), expected.cpu())
    assert not counters["graph_break"]


def test_streams_in_the_graph_are_the_stream_ops():
    """The waits are in the graph (torch.ops.streams.*) and the work inside ``with
    torch.npu.stream(side)`` carries the side stream's annotation (AOTAutograd turns it into
    fork/join), so the compiled region orders its work as the eager region does."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    torch._dynamo.reset()
    torch.compile(fork_join, backend=backend, fullgraph=True)(torch.arange(8.0, device="npu"))
    calls = [node for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert [str(node.target) for node in calls].count("streams.wait_stream") == 2
    multiply = next(node for node in calls if "mul" in str(node.target))
    add = next(node for node in calls if "add" in str(node.target))
    assert (multiply.meta.get("custom") or {}).get("stream") is not None
    assert (add.meta.get("custom") or {}).get("stream") is None


def test_inductor_orders_kernels_around_events_and_side_streams():
    """Inductor's C++ kernels of npu are emitted before an event call, not after it, and a graph
    with a side stream runs its kernels in that stream's context."""
    torch._dynamo.reset()

    def region(x):
        event = torch.npu.Event()
        y = x * 2
        event.record()
        event.wait()
        side = torch.npu.Stream()
        side.wait_stream(torch.npu.current_stream())
        with torch.npu.stream(side):
            z = y.sin()
        torch.npu.current_stream().wait_stream(side)
        return z + 1

    x = torch.arange(16.0, device="npu")
    compiled = torch.compile(region, fullgraph=True)
    torch.testing.assert_close(compiled(x).cpu(), region(x).cpu(), atol=1e-4, rtol=1e-4)


def elapsed(x):
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    y = x * 2
    end.record()
    end.synchronize()
    return y, start.elapsed_time(end)


def reseeding(x):
    torch.npu.manual_seed(0)
    return x + 1


@pytest.mark.parametrize(
    "fn, reason",
    [(elapsed, "Unsupported event method"), (reseeding, "skip")],
    ids=["elapsed_time", "manual_seed"],
)
def test_graph_breaks_where_cuda_breaks(fn, reason):
    """Event.elapsed_time and manual_seed break the graph on CUDA (unsupported event method;
    a skipped function); they do on npu, with the same reason, and still run right."""
    torch._dynamo.reset()
    counters.clear()
    x = torch.arange(8.0, device="npu")
    expected = fn(x)
    got = torch.compile(fn, backend="eager")(x)
    first = got[0] if isinstance(got, tuple) else got
    torch.testing.assert_close(first.cpu(), (expected[0] if isinstance(expected, tuple) else expected).cpu())
    reasons = " ".join(counters["graph_break"])
    assert reason.lower() in reasons.lower(), dict(counters["graph_break"])


def test_npu_rules_mirror_the_cuda_rules():
    from torch._dynamo import trace_rules

    from npusim.compile import dynamo_rules

    rules = dynamo_rules.npu_trace_rules()
    cuda = {name.rsplit(".", 1)[-1]: rule for table in trace_rules.torch_name_rule_map
            for name, rule in table.items() if name.startswith("torch.cuda.")}
    for name in ("current_stream", "stream", "synchronize", "set_stream", "default_stream", "manual_seed"):
        npu_name = next(n for n in rules if n.endswith("." + name))
        assert rules[npu_name] is cuda[name], name
    looked_up = trace_rules.lookup(torch.npu.current_stream)
    assert looked_up is cuda["current_stream"]
