// Pinned (page-locked) host memory for the npu device: Tensor.pin_memory(),
// DataLoader(pin_memory=True) and non-blocking host-to-device copies.
#pragma once

#include <c10/core/Allocator.h>

namespace npusim::backend {

at::Allocator* pinnedHostAllocator();
bool isPinnedHostPointer(const void* ptr);

}  // namespace npusim::backend
