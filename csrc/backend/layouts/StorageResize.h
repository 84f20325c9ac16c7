// Growing the storage of an npu tensor (resize_, set_, out= arguments).
#pragma once

#include <c10/core/Storage.h>

namespace npusim::backend {

// Reallocates `storage` (an npu storage) to `newBytes` on its device, keeping
// the first min(old, new) bytes, as a device-to-device copy would.
void resizeNpuStorage(const c10::Storage& storage, size_t newBytes);

}  // namespace npusim::backend
