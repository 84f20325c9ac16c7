// Kernels replayed from a captured graph (torch.npu.NPUGraph) are launched by
// the device from one graph launch, not dispatched one by one by the host:
// while a replay runs, the timeline charges no per-kernel host dispatch.
#pragma once

namespace npusim::backend {

// Whether the current thread is replaying a captured graph.
bool replayingGraph() noexcept;
void setReplayingGraph(bool replaying) noexcept;

}  // namespace npusim::backend
