// Host memory registered with the device (aclrtHostRegister, reached through
// torch.npu.npurt().npuHostRegister): copies from and to such a range run at
// pinned-memory speed, as from memory of the pinned host allocator.
#pragma once

#include <cstddef>
#include <cstdint>

namespace npusim::backend {

// 0 on success; the ACL error code otherwise (107000: invalid argument, or a
// range overlapping one already registered).
int registerHostMemory(uintptr_t address, size_t bytes);
// 0 on success; 107000 when `address` does not start a registered range.
int unregisterHostMemory(uintptr_t address);
bool isRegisteredHostPointer(const void* ptr);

}  // namespace npusim::backend
