// Device memory as PyTorch sees it: DataPtrs backed by the runtime's caching
// allocators, the c10::DeviceAllocator registered for PrivateUse1 (so that
// torch.accelerator memory statistics work), and the routing of CPU-kernel
// outputs into device memory.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>

namespace npusim::backend {

// Device memory of `bytes` on `device`, from its caching allocator, on the
// calling thread's current stream. The DataPtr is labelled `label` (npu for a
// device tensor; cpu for the output of a CPU kernel that will be adopted as a
// device tensor). Its deleter returns the block to the device's allocator.
c10::DataPtr allocateDeviceMemory(int device, size_t bytes, c10::DeviceType label);

// The device whose allocator owns `dataPtr`'s memory, or -1 if none does.
int owningDevice(const c10::DataPtr& dataPtr) noexcept;

// The allocator of npu tensors (at::GetAllocator(kPrivateUse1)).
c10::DeviceAllocator* npuDeviceAllocator();

// While alive, CPU allocations made on this thread come from the caching
// allocator of `device`: the CPU kernel run for an npu operator thereby
// writes its outputs straight into device memory (no copy afterwards).
class ScopedOutputDevice {
 public:
  explicit ScopedOutputDevice(int device) noexcept;
  ~ScopedOutputDevice();
  ScopedOutputDevice(const ScopedOutputDevice&) = delete;
  ScopedOutputDevice& operator=(const ScopedOutputDevice&) = delete;

 private:
  int previous_;
};

// The CPU allocator that honours ScopedOutputDevice; it is installed as
// PyTorch's CPU allocator when the backend loads.
c10::Allocator* routingCpuAllocator();

}  // namespace npusim::backend
