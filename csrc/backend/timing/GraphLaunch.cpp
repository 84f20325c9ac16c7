#include "backend/timing/GraphLaunch.h"

namespace npusim::backend {
namespace {
// Per thread: a replay on one thread must not hide another thread's dispatches.
thread_local bool replaying = false;
thread_local uint64_t replays = 0;
}  // namespace

bool replayingGraph() noexcept { return replaying; }
void setReplayingGraph(bool value) noexcept {
  if (value && !replaying) ++replays;
  replaying = value;
}
uint64_t graphReplayNumber() noexcept { return replays; }

}  // namespace npusim::backend
