// aten::_fft_c2c / _fft_r2c / _fft_c2r on npu: each transformed dimension
// takes a plan from the LRU cache (creating it when missing, dropping the
// least recently used one when full), then the executor runs the transform.
// The plans are bookkeeping: npusim's transforms are PyTorch's CPU kernels.
#include "backend/families/FftPlanCache.h"

#include <algorithm>
#include <list>
#include <mutex>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "backend/device/NpuErrors.h"
#include "backend/executor/OperatorExecutor.h"

namespace npusim::backend {
namespace {

enum class PlanKind { kC2C, kR2C, kC2R };

struct PlanKey {
  int64_t length;
  bool forward;
  PlanKind kind;
  c10::ScalarType dtype;
  bool operator==(const PlanKey& other) const {
    return std::tie(length, forward, kind, dtype) == std::tie(other.length, other.forward, other.kind, other.dtype);
  }
};

constexpr int64_t kDefaultCapacity = 10;  // op-plugin's FFTMixCache(10)
constexpr int64_t kLargestCapacity = 99;

std::mutex& cacheMutex() {
  static std::mutex mutex;
  return mutex;
}
std::list<PlanKey>& plans() {  // front: least recently used
  static std::list<PlanKey> list;
  return list;
}
int64_t& capacity() {
  static int64_t value = kDefaultCapacity;
  return value;
}

void usePlan(const PlanKey& key) {
  std::lock_guard<std::mutex> lock(cacheMutex());
  auto& list = plans();
  auto found = std::find(list.begin(), list.end(), key);
  if (found != list.end()) {
    list.splice(list.end(), list, found);
    return;
  }
  if (static_cast<int64_t>(list.size()) >= capacity()) list.pop_front();
  list.push_back(key);
}

int64_t normalizedDim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

// The arguments are read from the boxed stack: self, dim, normalization, then
// forward (c2c), onesided (r2c) or last_dim_size (c2r).
void notePlans(PlanKind kind, const torch::jit::Stack& stack, size_t first) {
  const at::Tensor& self = stack[first].toTensor();
  const auto dims = stack[first + 1].toIntVector();
  const int64_t rank = self.dim();
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalizedDim(dims[i], rank);
    if (d < 0 || d >= rank) continue;  // the kernel reports the bad dimension
    const bool last = i + 1 == dims.size();
    PlanKey key{self.size(d), true, PlanKind::kC2C, self.scalar_type()};
    if (kind == PlanKind::kC2C) {
      key.forward = stack[first + 3].toBool();
    } else if (kind == PlanKind::kR2C) {
      key.kind = last ? PlanKind::kR2C : PlanKind::kC2C;
    } else {
      // c2r: the inverse transforms, the last one complex to real of length last_dim_size.
      key.forward = false;
      if (last) {
        key.kind = PlanKind::kC2R;
        key.length = stack[first + 3].toInt();
      }
    }
    usePlan(key);
  }
}

template <PlanKind Kind>
void fftOnNpu(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  const size_t first = stack->size() - op.schema().arguments().size();
  notePlans(Kind, *stack, first);
  executeOnNpu(op, keys, stack);
}

}  // namespace

int64_t fftPlanCacheSize() {
  std::lock_guard<std::mutex> lock(cacheMutex());
  return static_cast<int64_t>(plans().size());
}

int64_t fftPlanCacheCapacity() {
  std::lock_guard<std::mutex> lock(cacheMutex());
  return capacity();
}

void setFftPlanCacheCapacity(int64_t value) {
  TORCH_CHECK(value >= 1 && value <= kLargestCapacity, "invalid value of cache_size, expected 1 to 99",
              errorSuffix(ErrorModule::kPta, ErrorKind::kInvalidValue));
  std::lock_guard<std::mutex> lock(cacheMutex());
  capacity() = value;
  while (static_cast<int64_t>(plans().size()) > value) plans().pop_front();
}

void clearFftPlanCache() {
  std::lock_guard<std::mutex> lock(cacheMutex());
  plans().clear();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", torch::CppFunction::makeFromBoxedFunction<&fftOnNpu<PlanKind::kC2C>>());
  m.impl("_fft_c2c.out", torch::CppFunction::makeFromBoxedFunction<&fftOnNpu<PlanKind::kC2C>>());
  m.impl("_fft_r2c", torch::CppFunction::makeFromBoxedFunction<&fftOnNpu<PlanKind::kR2C>>());
  m.impl("_fft_r2c.out", torch::CppFunction::makeFromBoxedFunction<&fftOnNpu<PlanKind::kR2C>>());
  m.impl("_fft_c2r", torch::CppFunction::makeFromBoxedFunction<&fftOnNpu<PlanKind::kC2R>>());
  m.impl("_fft_c2r.out", torch::CppFunction::makeFromBoxedFunction<&fftOnNpu<PlanKind::kC2R>>());
}

}  // namespace npusim::backend
