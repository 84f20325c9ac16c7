#include "backend/device/NpuStreams.h"

#include <array>

#include "backend/device/HeapThreadLocal.h"

namespace npusim::backend {
namespace {
// On the heap (HeapThreadLocal.h: 512 bytes would crowd the static TLS area);
// a thread that never set a stream has none and is on every default stream.
using CurrentStreams = HeapThreadLocal<std::array<runtime::StreamId, kMaxDevices>>;
}  // namespace

runtime::StreamId currentStream(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return 0;
  const auto* streams = CurrentStreams::peek();
  return streams != nullptr ? (*streams)[static_cast<size_t>(device)] : 0;
}

void setCurrentStream(int device, runtime::StreamId stream) noexcept {
  if (device < 0 || device >= kMaxDevices) return;
  auto* streams = CurrentStreams::peek();
  // Setting the default stream on a thread that has no table changes nothing.
  if (streams == nullptr && stream == 0) return;
  if (streams == nullptr) streams = &CurrentStreams::get();
  (*streams)[static_cast<size_t>(device)] = stream;
}

}  // namespace npusim::backend
