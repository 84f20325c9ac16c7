#include "backend/device/RecoveryChecks.h"

#include "backend/device/NpuErrors.h"
#include "runtime/DeviceRecovery.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

bool isNpuStorage(const c10::Storage& storage) {
  return storage.device().type() == c10::DeviceType::PrivateUse1 && storage.data() != nullptr;
}

}  // namespace

void checkDeviceNotStopped(int device) {
  // torch_npu's task queue refuses work once stop_device set its streams to STOP_EXIT.
  TORCH_CHECK(!runtime::DeviceRecovery::stopped(device), "FORCE STOP.",
              errorSuffix(ErrorModule::kPta, ErrorKind::kAclCallFailed));
}

void checkStorageDataSafe(const c10::Storage& storage) {
  if (!runtime::DeviceRecovery::unsafeDataCheck() || !isNpuStorage(storage)) return;
  bool safe = true;
  NPUSIM_TRANSLATE_ERRORS(safe = runtime::Runtime::instance().allocator(storage.device().index()).isBlockSafe(
                              storage.data()));
  TORCH_CHECK(safe, "There is unsafe data in the input tensor.",
              errorSuffix(ErrorModule::kPta, ErrorKind::kInvalidValue));
}

void checkDataSafe(const at::Tensor& tensor) {
  if (tensor.defined() && tensor.has_storage()) checkStorageDataSafe(tensor.storage());
}

void markDataSafe(const at::Tensor& tensor) {
  if (!runtime::DeviceRecovery::unsafeDataCheck() || !tensor.defined() || !tensor.has_storage()) return;
  const c10::Storage& storage = tensor.storage();
  if (!isNpuStorage(storage)) return;
  NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().allocator(storage.device().index()).markBlockSafe(
      storage.data()));
}

}  // namespace npusim::backend
