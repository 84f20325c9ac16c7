#include "backend/timing/GraphLaunch.h"

namespace npusim::backend {
namespace {
// Per thread: a replay on one thread must not hide another thread's dispatches.
thread_local bool replaying = false;
}  // namespace

bool replayingGraph() noexcept { return replaying; }
void setReplayingGraph(bool value) noexcept { replaying = value; }

}  // namespace npusim::backend
