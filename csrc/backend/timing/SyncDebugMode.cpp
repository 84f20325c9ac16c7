#include "backend/timing/SyncDebugMode.h"

#include <algorithm>
#include <atomic>

#include <c10/util/Exception.h>

#include "backend/device/NpuErrors.h"

namespace npusim::backend {
namespace {

std::atomic<int> mode{0};

}  // namespace

int syncDebugMode() noexcept { return mode.load(std::memory_order_relaxed); }

// Values outside 0..2 are clamped, as torch_npu's warning state does.
void setSyncDebugMode(int value) noexcept { mode.store(std::clamp(value, 0, 2), std::memory_order_relaxed); }

void warnOrErrorOnSync() {
  switch (syncDebugMode()) {
    case 2: TORCH_CHECK(false, "called a synchronizing NPU operation", errorSuffix(ErrorModule::kPta, ErrorKind::kAclCallFailed));
    case 1: TORCH_WARN("called a synchronizing NPU operation"); break;
    default: break;
  }
}

}  // namespace npusim::backend
