#include "backend/timing/EstimateMode.h"

#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>

#include "backend/device/NpuAllocator.h"
#include "backend/timing/OperatorPlacement.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

std::atomic<int> estimateDepth{0};

at::Tensor metaEmpty(c10::IntArrayRef sizes, c10::ScalarType dtype) {
  return at::empty(sizes, at::TensorOptions().device(c10::kMeta).dtype(dtype));
}

}  // namespace

bool estimateOnly() noexcept { return estimateDepth.load(std::memory_order_relaxed) > 0; }

void enterEstimateOnly() {
  if (estimateDepth.fetch_add(1) == 0) runtime::Runtime::instance().setOvercommit(true);
}

void exitEstimateOnly() {
  if (estimateDepth.fetch_sub(1) == 1) runtime::Runtime::instance().setOvercommit(false);
}

c10::Storage makeMetaStorageAlias(const c10::Storage& npu) {
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), npu.nbytes(), c10::DataPtr(nullptr, c10::Device(c10::kMeta)),
      c10::GetAllocator(c10::kMeta), /*resizable=*/true));
}

at::Tensor makeMetaAlias(const at::Tensor& npu, const c10::Storage& storageAlias) {
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(storageAlias),
                                                               c10::DispatchKeySet(c10::DispatchKey::Meta), npu.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(npu.sizes(), npu.strides(), npu.storage_offset());
  return alias;
}

c10::Storage allocateNpuStorageFor(const c10::Storage& meta, int device) {
  const size_t nbytes = meta.nbytes();
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), nbytes,
      allocateDeviceMemory(device, nbytes, c10::DeviceType::PrivateUse1), npuDeviceAllocator(),
      /*resizable=*/true));
}

void warnEstimateOnce(std::string_view what, std::string_view text) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(std::string(what)).second) return;
  }
  if (!npuWarningsDisabled()) TORCH_WARN("npusim estimate-only mode: ", text);
}

std::optional<std::vector<c10::IValue>> dataDependentMetaOutputs(std::string_view name,
                                                                  const std::vector<c10::IValue>& args) {
  auto warn = [&](const char* rule) { warnEstimateOnce(name, std::string(name) + ": " + rule); };
  if (name == "aten::nonzero") {
    const at::Tensor& self = args[0].toTensor();
    warn("the output size depends on the data; assuming every element is nonzero");
    return std::vector<c10::IValue>{metaEmpty({self.numel(), self.dim()}, c10::kLong)};
  }
  if (name == "aten::masked_select") {
    const at::Tensor& self = args[0].toTensor();
    const at::Tensor& mask = args[1].toTensor();
    const auto shape = at::infer_size(self.sizes(), mask.sizes());
    int64_t numel = 1;
    for (const int64_t size : shape) numel *= size;
    warn("the output size depends on the data; assuming every element is selected");
    return std::vector<c10::IValue>{metaEmpty({numel}, self.scalar_type())};
  }
  if (name == "aten::_unique2" || name == "aten::unique_consecutive") {
    const at::Tensor& self = args[0].toTensor();
    const bool inverse = args[name == "aten::_unique2" ? 2 : 1].toBool();
    const bool counts = args[name == "aten::_unique2" ? 3 : 2].toBool();
    warn("the output size depends on the data; assuming every value is distinct");
    return std::vector<c10::IValue>{metaEmpty({self.numel()}, self.scalar_type()),
                                    metaEmpty(inverse ? self.sizes() : c10::IntArrayRef{0}, c10::kLong),
                                    metaEmpty({counts ? self.numel() : 0}, c10::kLong)};
  }
  if (name == "aten::index.Tensor") {
    // Only boolean masks make the size data-dependent; x[mask] keeps the
    // dimensions after the mask's and selects every masked element.
    const at::Tensor& self = args[0].toTensor();
    const auto indices = args[1].toOptionalTensorList();
    if (indices.size() != 1 || !indices.get(0).has_value()) return std::nullopt;
    const at::Tensor mask = *indices.get(0);
    if (mask.scalar_type() != c10::kBool && mask.scalar_type() != c10::kByte) return std::nullopt;
    std::vector<int64_t> shape{mask.numel()};
    for (int64_t d = mask.dim(); d < self.dim(); ++d) shape.push_back(self.size(d));
    warn("boolean-mask indexing: the output size depends on the data; assuming every element is selected");
    return std::vector<c10::IValue>{metaEmpty(shape, self.scalar_type())};
  }
  return std::nullopt;
}

}  // namespace npusim::backend
