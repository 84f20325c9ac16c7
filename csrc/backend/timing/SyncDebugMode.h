// torch.npu.set_sync_debug_mode: warn about, or refuse, operations that make
// the host wait for the device (torch_npu's warn_or_error_on_sync).
#pragma once

namespace npusim::backend {

// 0 = default (silent), 1 = warn, 2 = error.
int syncDebugMode() noexcept;
void setSyncDebugMode(int mode) noexcept;

// Called at every synchronization point: warns with torch_npu's text, or
// raises it (with the error-code suffix) in error mode.
void warnOrErrorOnSync();

}  // namespace npusim::backend
