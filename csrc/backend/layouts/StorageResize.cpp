#include "backend/layouts/StorageResize.h"

#include <algorithm>
#include <cstring>

#include "backend/device/NpuAllocator.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorTiming.h"

namespace npusim::backend {

void resizeNpuStorage(const c10::Storage& storage, size_t newBytes) {
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  TORCH_CHECK(impl->resizable(), "Trying to resize storage that is not resizable");
  const int device = impl->device().index() < 0 ? 0 : impl->device().index();
  c10::DataPtr fresh = allocateDeviceMemory(device, newBytes, c10::DeviceType::PrivateUse1);
  const size_t kept = std::min(impl->nbytes(), newBytes);
  if (kept > 0 && impl->data() != nullptr && !estimateOnly()) {
    std::memcpy(fresh.get(), impl->data(), kept);
    chargeDeviceCopy(device, kept);
  }
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(newBytes);
}

}  // namespace npusim::backend
