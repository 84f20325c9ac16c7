"""User streams and events in an Inductor-compiled npu graph.

Dynamo puts ``torch.npu`` stream and event calls into the graph as ``torch.ops.streams.*``
(npusim.compile.dynamo_rules); Inductor keeps them as fallback calls and, for a graph with
side streams, wraps the kernels of each stream in ``with stream:`` inside a device guard. Two
places of its scheduler are written for GPU devices only and are widened to npu here:

- The device guard (and with it the stream variables of the wrapper) exists only for devices
  that ``device_need_guard`` names (CUDA, XPU); npu gets it when its graph uses side streams,
  so a graph without them keeps the guard-free wrapper (no host cost per call).
- A device-less call (``record_event``, ``wait_event``, ``synchronize_device``) does not end
  the kernel being generated. Triton kernels are emitted one by one, so on GPUs this never
  matters; npu kernels come from the C++ code generator, which collects fused nodes until a
  flush, so the kernel would move past the event (reading a buffer already freed, or running
  on the wrong side of a wait). The calls get the graph's npu device, which flushes the
  kernel before them, as Inductor already does for multi-stream graphs.
"""

from __future__ import annotations


def _graph_uses_side_streams() -> bool:
    from torch._inductor.virtualized import V

    scheduler = getattr(V.graph, "scheduler", None)
    return bool(getattr(scheduler, "_multi_stream_nodes", False))


def _place_deviceless_calls_on_npu(scheduler) -> None:
    from torch._inductor import ir

    device = next((n.get_device() for n in scheduler.nodes if n.get_device() is not None), None)
    if device is None or device.type != "npu":
        return
    for node in scheduler.nodes:
        ir_node = node.node
        if (
            node.get_device() is None
            and isinstance(ir_node, ir.Buffer)
            and isinstance(ir_node.layout, ir.NoneLayout)
        ):
            ir_node.layout = ir.NoneLayout(device=device)


def install() -> None:
    """Patch Inductor's scheduler for npu streams; idempotent."""
    from torch._inductor import scheduler as scheduler_module

    if getattr(scheduler_module.device_need_guard, "_npusim", False):
        return
    original_need_guard = scheduler_module.device_need_guard

    def device_need_guard(device: str) -> bool:
        return original_need_guard(device) or (device == "npu" and _graph_uses_side_streams())

    device_need_guard._npusim = True  # type: ignore[attr-defined]
    scheduler_module.device_need_guard = device_need_guard

    original_populate = scheduler_module.Scheduler._populate_stream_assignments

    def populate_stream_assignments(self) -> None:
        original_populate(self)
        _place_deviceless_calls_on_npu(self)

    scheduler_module.Scheduler._populate_stream_assignments = populate_stream_assignments
