// One operator call on npu (see OperatorCall.h): the state both executor
// paths share, from the arguments' aliases to the results' adoption.
#include "backend/executor/OperatorCall.h"

#include <c10/core/Device.h>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/NpuGenerator.h"
#include "backend/device/RecoveryChecks.h"
#include "backend/device/TensorAliasing.h"
#include "backend/layouts/SparseTensors.h"
#include "backend/numerics/InfNanMode.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/L2Residency.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/DeviceRecovery.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

bool isNpu(const at::Tensor& t) noexcept { return t.device().type() == c10::DeviceType::PrivateUse1; }
bool isNpu(const c10::TensorImpl& t) noexcept { return t.device_type() == c10::DeviceType::PrivateUse1; }

}  // namespace

bool OperatorCall::isWrittenArgument(size_t index) const noexcept {
  for (const size_t written : record_.writtenArguments) {
    if (written == index) return true;
  }
  return false;
}

at::Tensor OperatorCall::mapTensor(const at::Tensor& tensor, size_t index, bool keep) {
  if (!tensor.defined()) return at::Tensor();
  const bool written = isWrittenArgument(index);
  const uint8_t role = index < record_.operandRoles.size() ? record_.operandRoles[index] : operand_role::kRead;
  const bool isIndices = static_cast<int>(index) == record_.indicesArgument;
  const c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  noteDtype(*impl, isIndices, index);
  if (role & operand_role::kRead) inputs_.push_back(impl);
  if (isNpu(*impl)) {
    at::Tensor alias = aliasArgument(tensor, written, keep);
    if (role & operand_role::kWrite) writtenOperands_.push_back(alias.unsafeGetTensorImpl());
    return alias;
  }
  noteCpuArgument(tensor, written, isIndices);
  if (role & operand_role::kWrite) writtenOperands_.push_back(impl);
  return at::Tensor();
}

c10::Device OperatorCall::mapDevice(const c10::Device& device) {
  if (device.type() != c10::DeviceType::PrivateUse1) return device;
  noteDevice(device);
  return c10::Device(meta_ ? c10::DeviceType::Meta : c10::DeviceType::CPU);
}

at::Generator OperatorCall::cpuGenerator(const std::optional<at::Generator>& generator) const {
  return cpuGeneratorFor(generator, static_cast<c10::DeviceIndex>(device_));
}

void OperatorCall::noteDtype(const c10::TensorImpl& tensor, bool isIndices, size_t index) {
  const c10::ScalarType type = c10::typeMetaToScalarType(tensor.dtype());
  const int bit = dtypeBit(type);
  if (bit < 0) return;
  const runtime::DtypeMask mask = runtime::DtypeMask{1} << bit;
  if (facts_.firstDtype < 0) facts_.firstDtype = bit;
  facts_.allDtypes |= mask;
  if (isIndices) facts_.indexDtypes |= mask;
  if (isNpu(tensor) && tensor.dim() > 0) facts_.deviceDtypes |= mask;
  if ((mask & record_.rejectedDtypes) != 0 && facts_.rejectedType == c10::ScalarType::Undefined) {
    facts_.rejectedArgument = record_.schema->arguments()[index].name();
    facts_.rejectedType = type;
  }
}

void OperatorCall::noteCpuArgument(const at::Tensor& cpu, bool written, bool isIndices) {
  // A zero-dimensional CPU tensor read as a scalar may join any device, as on
  // CUDA; one the operator writes (an out= tensor) would receive the result
  // on the wrong device, so CUDA and torch_npu reject it. Indexing operators
  // take CPU index tensors, but their self and values must be on the device.
  const bool scalar = cpu.dim() == 0 && !written;
  const bool cpuIndices = isIndices && record_.acceptsCpuTensors;
  if (!scalar && !cpuIndices && foreignDevice_.type() != c10::DeviceType::CPU) {
    foreignDevice_ = cpu.device();
  }
}

void OperatorCall::noteDevice(const c10::Device& device) {
  const int index = device.has_index() ? device.index() : runtime::Runtime::instance().currentDevice();
  if (device_ < 0) {
    device_ = index;
  } else if (index != device_) {
    foreignDevice_ = c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index));
  }
}

at::Tensor OperatorCall::aliasArgument(const at::Tensor& npu, bool written, bool keep) {
  noteDevice(npu.device());
  const c10::Storage& npuStorage = npu.storage();
  const c10::StorageImpl* storage = npuStorage.unsafeGetStorageImpl();
  const c10::Storage* shared = nullptr;
  for (const auto& entry : storages_) {
    if (entry.npuImpl == storage) shared = &entry.cpu;
  }
  if (shared == nullptr) {
    storages_.push_back(StorageAlias{storage, &npuStorage,
                                     meta_ ? makeMetaStorageAlias(npuStorage) : aliases().storageAlias(npuStorage),
                                     c10::Storage()});
    shared = &storages_.back().cpu;
  }
  at::Tensor cpu = meta_ ? makeMetaAlias(npu, *shared) : aliases().tensorAlias(npu, *shared);
  if (owned_ || keep) {
    tensors_.push_back(TensorAlias{nullptr, npu, cpu, written});
  } else {
    tensors_.push_back(TensorAlias{&npu, at::Tensor(), cpu, written});
  }
  return cpu;
}

void OperatorCall::checkDevices() const {
  if (device_ >= 0 && foreignDevice_.type() != c10::DeviceType::Meta) {
    // A CPU tensor reaches the npu kernel's argument conversion, which refuses it in torch_npu's
    // words; two npu devices fail PyTorch's device check.
    if (foreignDevice_.type() == c10::DeviceType::CPU) throwExpectedNpuTensor();
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, npu:",
                device_, " and ", foreignDevice_, "!");
  }
}

const PlacementDecision& OperatorCall::decide() {
  if (device_ < 0) noteDevice(c10::Device(c10::DeviceType::PrivateUse1));
  checkDevices();
  if (runtime::DeviceRecovery::active()) checkRecoveryState();
  placement_ = decidePlacement(record_, facts_);
  return placement_;
}

void OperatorCall::checkRecoveryState() const {
  checkDeviceNotStopped(device_);
  // Every npu argument, read or written, as torch_npu's operator wrappers check them.
  for (const auto& entry : storages_) checkStorageDataSafe(entry.npuStorage());
}

const at::Tensor* OperatorCall::npuArgumentFor(const at::Tensor& kernelTensor) const noexcept {
  for (const auto& entry : tensors_) {
    if (entry.cpu.unsafeGetTensorImpl() == kernelTensor.unsafeGetTensorImpl()) return &entry.npu();
  }
  return nullptr;
}

void OperatorCall::checkStridedResults(const KernelResults& results) const {
  for (const auto& result : results) {
    if (!result.inList) checkStridedResult(record_.name.c_str(), result.tensor);
  }
}

// Whether each input is in the L2 (resident[i] for inputs_[i]; CPU inputs are
// not), asked for all npu inputs at once (one lock). Keeps their L2 buffers
// for touchOperands().
void OperatorCall::queryInputResidency(bool* resident) {
  inputBuffers_.clear();
  for (const c10::TensorImpl* t : inputs_) {
    if (isNpu(*t)) inputBuffers_.push_back(l2BufferOf(*t));
  }
  if (inputBuffers_.empty()) return;
  c10::SmallVector<bool, 8> onDevice(inputBuffers_.size(), false);
  queryL2Residency(device_, inputBuffers_, onDevice.data());
  size_t next = 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (isNpu(*inputs_[i])) resident[i] = onDevice[next++];
  }
}

// Outputs for pricing: the written arguments, then each returned tensor that
// is not one of them (an in-place result is counted once; nullptr for a
// result the kernel did not return).
c10::SmallVector<const c10::TensorImpl*, 8> OperatorCall::pricedOutputs(const KernelResults& results) const {
  c10::SmallVector<const c10::TensorImpl*, 8> outputs(writtenOperands_.begin(), writtenOperands_.end());
  for (const auto& result : results) {
    if (!result.tensor.defined()) {
      outputs.push_back(nullptr);
      continue;
    }
    const c10::TensorImpl* impl = result.tensor.unsafeGetTensorImpl();
    bool written = false;
    for (const c10::TensorImpl* w : writtenOperands_) written = written || w == impl;
    if (!written) outputs.push_back(impl);
  }
  return outputs;
}

// Written arguments take over what the kernel did to their aliases.
void OperatorCall::propagateWrites() {
  for (auto& entry : tensors_) {
    if (!entry.written) continue;
    c10::StorageImpl* aliasStorage = entry.cpu.storage().unsafeGetStorageImpl();
    c10::StorageImpl* npuStorage = entry.npu().storage().unsafeGetStorageImpl();
    if (aliasStorage->data() != npuStorage->data() || aliasStorage->nbytes() != npuStorage->nbytes()) {
      takeOverStorage(entry, aliasStorage, npuStorage);
    }
    const at::Tensor& cpu = entry.cpu;
    const at::Tensor& npu = entry.npu();
    if (cpu.sizes() != npu.sizes() || cpu.strides() != npu.strides() ||
        cpu.storage_offset() != npu.storage_offset()) {
      npu.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
    }
  }
}

void OperatorCall::takeOverStorage(TensorAlias& entry, c10::StorageImpl* aliasStorage, c10::StorageImpl* npuStorage) {
  argumentStorageReplaced_ = true;  // the inputs' L2 buffers must be looked up again
  c10::TensorImpl* npu = entry.npu().unsafeGetTensorImpl();
  auto replaceStorage = [&](c10::Storage replacement) {
    // Results that view the old storage still map onto it.
    for (auto& storage : storages_) {
      if (storage.npuImpl == npuStorage && !storage.keptNpu) storage.keptNpu = npu->storage();
    }
    npu->set_storage_keep_dtype(std::move(replacement));
  };
  for (const auto& storage : storages_) {
    if (storage.cpu.unsafeGetStorageImpl() == aliasStorage && storage.npuImpl != npuStorage) {
      // The kernel pointed the alias at another argument's storage (set_).
      replaceStorage(storage.npuStorage());
      return;
    }
  }
  if (meta_ && isAliasStorage(aliasStorage)) {
    // The kernel grew the storage (out= resize): new device memory, no data.
    const c10::Storage grown = allocateNpuStorageFor(entry.cpu.storage(), device_);
    npuStorage->set_data_ptr_noswap(std::move(grown.unsafeGetStorageImpl()->mutable_data_ptr()));
    npuStorage->set_nbytes(aliasStorage->nbytes());
    return;
  }
  if (owningDevice(aliasStorage->data_ptr()) == device_ && isAliasStorage(aliasStorage)) {
    // The kernel grew the storage: the new block is device memory already.
    c10::DataPtr grown = std::move(aliasStorage->mutable_data_ptr());
    grown.unsafe_set_device(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_)));
    npuStorage->set_data_ptr_noswap(std::move(grown));
    npuStorage->set_nbytes(aliasStorage->nbytes());
    // Keep the alias consistent for any later argument sharing it.
    aliasStorage->set_data_ptr_noswap(
        c10::DataPtr(const_cast<void*>(npuStorage->data()), c10::Device(c10::DeviceType::CPU)));
    return;
  }
  replaceStorage(adopt(entry.cpu));
}

bool OperatorCall::isAliasStorage(const c10::StorageImpl* storage) const noexcept {
  for (const auto& entry : storages_) {
    if (entry.cpu.unsafeGetStorageImpl() == storage) return true;
  }
  return false;
}

c10::Storage OperatorCall::adopt(const at::Tensor& cpu) {
  c10::StorageImpl* storage = cpu.storage().unsafeGetStorageImpl();
  for (const auto& entry : adopted_) {
    if (entry.cpu == storage) return entry.npu;
  }
  adopted_.push_back(AdoptedStorage{storage, meta_ ? allocateNpuStorageFor(cpu.storage(), device_)
                                                   : adoptAsNpuStorage(cpu.storage(), device_)});
  return adopted_.back().npu;
}

at::Tensor OperatorCall::toNpu(at::Tensor cpu) {
  if (!cpu.defined() || isNpu(cpu)) return cpu;
  // A quantized result (a CPU fallback such as quantize_per_tensor.tensor_qparams) moves to the device as
  // torch_npu's CPU fallback moves it, with Tensor.to: PyTorch then needs kernels that QuantizedPrivateUse1
  // lacks on the 2.13 line and raises its dispatcher error, where adopting the memory would make a dense
  // tensor of a quantized dtype.
  if (cpu.is_quantized()) {
    return cpu.to(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_)));
  }
  const c10::StorageImpl* storage = cpu.storage().unsafeGetStorageImpl();
  for (const auto& entry : storages_) {
    if (entry.cpu.unsafeGetStorageImpl() == storage) return npuViewOf(entry.npuStorage(), cpu);  // a view of an input
  }
  // A new tensor: the kernel's own objects become the npu tensor when nothing
  // else holds them.
  if (!meta_ && convertResultToNpuInPlace(cpu, device_)) return cpu;
  return npuViewOf(adopt(cpu), cpu);
}

// The kernel's operands are now the most recent data in the L2 (after its
// traffic, touched in this order, under one lock).
void OperatorCall::touchOperands(const KernelResults& results, double traffic) const {
  c10::SmallVector<L2Buffer, 8> touched;
  if (!argumentStorageReplaced_) {
    touched.append(inputBuffers_.begin(), inputBuffers_.end());
  } else {
    for (const c10::TensorImpl* t : inputs_) {
      if (isNpu(*t)) touched.push_back(l2BufferOf(*t));
    }
  }
  for (const auto& entry : tensors_) {
    if (entry.written) touched.push_back(l2BufferOf(*entry.npu().unsafeGetTensorImpl()));
  }
  for (const auto& result : results) {
    const at::Tensor& tensor = result.npu();
    if (result.inList || !tensor.defined()) continue;
    if (isNpu(tensor)) touched.push_back(l2BufferOf(*tensor.unsafeGetTensorImpl()));
  }
  touchL2(device_, touched, traffic);
}

// Saturation mode (INF_NAN_MODE_ENABLE=0): the chip clamps what its kernels
// write, so the new results and written arguments are saturated; views of
// arguments share their (already saturated) data.
void OperatorCall::saturateResults(const KernelResults& results) const {
  for (const auto& entry : tensors_) {
    if (entry.written) applySaturationIfEnabled(entry.npu());
  }
  for (const auto& result : results) {
    const at::Tensor& tensor = result.npu();
    if (!tensor.defined()) continue;
    bool viewOfArgument = false;
    for (const auto& entry : storages_) {
      viewOfArgument = viewOfArgument || entry.npuStorage().unsafeGetStorageImpl() ==
                                             tensor.storage().unsafeGetStorageImpl();
    }
    if (!viewOfArgument) applySaturationIfEnabled(tensor);
  }
}

void OperatorCall::complete(KernelResults& results) {
  checkStridedResults(results);
  const auto outputs = pricedOutputs(results);
  c10::SmallVector<bool, 8> resident(inputs_.size(), false);
  queryInputResidency(resident.data());
  // A data-dependent output size (nonzero, boolean indexing, ...) makes the
  // host wait for the device before it can go on. The kernel's L2 traffic
  // joins the touches of its operands below (one lock).
  double l2Traffic = 0;
  const runtime::SimTimeNs deviceNs = chargeOperatorCall(device_, record_.kind, inputs_, resident.data(), outputs,
                                                         placement_.placement, placement_.sync, &l2Traffic);
  record_.deviceNs.fetch_add(deviceNs, std::memory_order_relaxed);
  if (placement_.sync) recordSyncPoint(record_.name);
  propagateWrites();
  for (auto& result : results) {
    if (const at::Tensor* argument = result.tensor.defined() ? npuArgumentFor(result.tensor) : nullptr) {
      result.argument = argument;  // in-place / out=
      result.tensor.reset();
    } else {
      result.tensor = toNpu(std::move(result.tensor));
    }
  }
  if (placement_.placement == runtime::Placement::kAiCore) {
    touchOperands(results, l2Traffic);
  } else if (l2Traffic > 0) {
    addL2Traffic(device_, l2Traffic);
  }
  if (saturationModeEnabled() && !meta_) saturateResults(results);
}

}  // namespace npusim::backend
