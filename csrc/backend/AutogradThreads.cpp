#include "backend/AutogradThreads.h"

#include <pthread.h>

#include <atomic>
#include <cstring>

namespace npusim::backend {
namespace {

std::atomic<uint64_t> startedWorkers{0};
// Each thread looks at its name once: the engine names its workers before
// their first setDevice, and other threads never become workers later.
thread_local bool nameChecked = false;

}  // namespace

void noteDeviceThreadIfAutograd(int device) noexcept {
  if (nameChecked) return;
  nameChecked = true;
  if (device < 0 || device >= 64) return;
  char name[16] = {};
  if (::pthread_getname_np(::pthread_self(), name, sizeof name) != 0) return;
  if (std::strncmp(name, "pt_autograd_", 12) != 0) return;
  startedWorkers.fetch_or(uint64_t{1} << device, std::memory_order_relaxed);
}

uint64_t autogradDeviceThreads() noexcept { return startedWorkers.load(std::memory_order_relaxed); }

}  // namespace npusim::backend
