// Registration of the executor's unboxed path (see UnboxedExecutor.h).
#include <atomic>
#include <mutex>

#include "backend/executor/UnboxedExecutor.h"

namespace npusim::backend {
namespace {

std::atomic<bool> unboxedEnabled{true};

}  // namespace

bool unboxedExecutorEnabled() noexcept { return unboxedEnabled.load(std::memory_order_relaxed); }

void setUnboxedExecutorEnabled(bool enabled) noexcept { unboxedEnabled.store(enabled, std::memory_order_relaxed); }

size_t registerUnboxedExecutor() {
  static std::once_flag registered;
  static size_t count = 0;
  std::call_once(registered, [] {
    static auto* library =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    count = registerUnboxedElementwiseOperators(*library) + registerUnboxedNnOperators(*library) +
            registerUnboxedForeachOperators(*library);
  });
  return count;
}

}  // namespace npusim::backend
