// Kernels replayed from a captured graph (torch.npu.NPUGraph) are launched by
// the device from one graph launch, not dispatched one by one by the host:
// while a replay runs, the timeline charges no per-kernel host dispatch.
#pragma once

#include <cstdint>

namespace npusim::backend {

// Whether the current thread is replaying a captured graph.
bool replayingGraph() noexcept;
void setReplayingGraph(bool replaying) noexcept;
// Counts the replays this thread has started (each setReplayingGraph(true)),
// for kernels whose launch depends on being the first of a replay.
uint64_t graphReplayNumber() noexcept;

}  // namespace npusim::backend
