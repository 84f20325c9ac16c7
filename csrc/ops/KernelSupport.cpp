#include "ops/KernelSupport.h"

#include <mutex>
#include <string_view>
#include <unordered_map>

#include "backend/device/NpuErrors.h"
#include "backend/executor/KernelOperands.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/Runtime.h"

namespace npusim::ops {

at::Tensor hostOperand(const at::Tensor& npu) { return backend::kernelOperandOrUndefined(npu); }

std::optional<at::Tensor> hostOperand(const std::optional<at::Tensor>& npu) { return backend::kernelOperand(npu); }

at::Tensor deviceResult(const at::Tensor& host, int device) {
  return backend::npuResultOrUndefined(host, device);
}

namespace {

void requireOnNpu(const at::Tensor& tensor) {
  if (tensor.defined() && tensor.device().type() != c10::DeviceType::PrivateUse1) backend::throwExpectedNpuTensor();
}

}  // namespace

void requireNpuTensors(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* tensor : tensors) requireOnNpu(*tensor);
}

void requireNpuTensor(const std::optional<at::Tensor>& tensor) {
  if (tensor.has_value()) requireOnNpu(*tensor);
}

std::string invalidParameter() {
  return backend::errorSuffix(backend::ErrorModule::kOps, backend::ErrorKind::kInvalidParameter);
}
std::string invalidValue() {
  return backend::errorSuffix(backend::ErrorModule::kOps, backend::ErrorKind::kInvalidValue);
}
std::string notSupported() {
  return backend::errorSuffix(backend::ErrorModule::kOps, backend::ErrorKind::kFeatureNotSupported);
}

ChipFamily chipFamily() {
  // torch_npu's SocVersion enum: 910A family < 200, 310P 200..219, 910B (A2)
  // 220..249, 910_93xx (A3) 250..259, 950 from 260.
  const int id = runtime::Runtime::instance().chip().socVersionId;
  if (id < 200) return ChipFamily::kAscend910A;
  if (id < 220) return ChipFamily::kAscend310P;
  if (id < 250) return ChipFamily::kAtlasA2;
  if (id < 260) return ChipFamily::kAtlasA3;
  return ChipFamily::kAscend950;
}

namespace {

const char* familyName(ChipFamily family) {
  switch (family) {
    case ChipFamily::kAscend910A: return "Atlas training series (Ascend910A)";
    case ChipFamily::kAscend310P: return "Atlas inference series (Ascend310P)";
    case ChipFamily::kAtlasA2: return "Atlas A2 training series (Ascend910B)";
    case ChipFamily::kAtlasA3: return "Atlas A3 training series (Ascend910_93)";
    case ChipFamily::kAscend950: return "Ascend950";
  }
  return "?";
}

}  // namespace

void requireChip(const char* op, std::initializer_list<ChipFamily> supported) {
  const ChipFamily family = chipFamily();
  for (ChipFamily allowed : supported) {
    if (allowed == family) return;
  }
  std::string products;
  for (ChipFamily allowed : supported) {
    if (!products.empty()) products += ", ";
    products += familyName(allowed);
  }
  TORCH_CHECK(false, op, " is not supported on ", runtime::Runtime::instance().chip().socName,
              " (", familyName(family), "); it is supported on: ", products, ".", notSupported());
}

void requireDtypeOnChip(const char* op, const at::Tensor& tensor) {
  if (tensor.defined() && tensor.scalar_type() == at::kBFloat16) {
    const ChipFamily family = chipFamily();
    TORCH_CHECK(family != ChipFamily::kAscend910A && family != ChipFamily::kAscend310P, op,
                ": bfloat16 is not supported on ", runtime::Runtime::instance().chip().socName,
                " (bfloat16 needs Ascend910B1 or later).", notSupported());
  }
}

double bytesOf(const at::Tensor& tensor) noexcept {
  return tensor.defined() ? double(tensor.numel()) * double(tensor.element_size()) : 0.0;
}

double bytesOf(const std::optional<at::Tensor>& tensor) noexcept {
  return tensor.has_value() ? bytesOf(*tensor) : 0.0;
}


perf::FusedKernelWork streamingWork(std::initializer_list<const at::Tensor*> inputs,
                                    std::initializer_list<const at::Tensor*> outputs, double elements,
                                    double opsPerElement) {
  perf::FusedKernelWork work;
  for (const at::Tensor* tensor : inputs) work.hbmBytes += bytesOf(*tensor);
  for (const at::Tensor* tensor : outputs) work.hbmBytes += bytesOf(*tensor);
  work.vectorElements = elements;
  work.opsPerElement = opsPerElement;
  work.computeType = perf::DType::kFloat32;  // the fused kernels compute in fp32
  return work;
}

namespace {

// The report record of `op` ("npu::npu_apply_adam_w.out": schema name, then
// overload), looked up once per call site: `op` is a string literal, so its
// address identifies it.
backend::OperatorRecord& recordOf(const char* op) {
  static std::mutex mutex;
  static std::unordered_map<const char*, backend::OperatorRecord*> records;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = records[op];
  if (slot == nullptr) {
    const std::string_view qualified(op);
    const size_t dot = qualified.find('.');
    slot = dot == std::string_view::npos
               ? &backend::nativeOperatorRecord(op)
               : &backend::nativeOperatorRecord(std::string(qualified.substr(0, dot)).c_str(),
                                                std::string(qualified.substr(dot + 1)).c_str());
  }
  return *slot;
}

}  // namespace

uint64_t chargeFusedKernel(int device, const char* op, perf::OperatorKind dispatchKind,
                           const perf::FusedKernelWork& work) {
  const perf::FusedKernelCost cost = perf::priceFusedKernel(backend::chipRates(), work);
  const auto deviceNs = static_cast<runtime::SimTimeNs>(cost.seconds * 1e9 + 0.5);
  backend::OperatorRecord& record = recordOf(op);
  const runtime::SimTimeNs charged = backend::chargeModelledKernel(
      device, dispatchKind, deviceNs, cost.unit, cost.unit == perf::Unit::kCube ? cost.flops : 0.0, cost.bytes);
  backend::countNativeCall(record, charged);
  return charged;
}

}  // namespace npusim::ops
