#include "backend/timing/CoreLimits.h"

#include <array>
#include <atomic>
#include <cmath>

namespace npusim::backend {
namespace {

constexpr int kMaxDevices = 64;

struct Factors {
  std::atomic<double> cube{1.0};
  std::atomic<double> vector{1.0};
};

std::array<Factors, kMaxDevices>& factors() {
  static auto* all = new std::array<Factors, kMaxDevices>();
  return *all;
}

}  // namespace

void setCoreLimitFactors(int device, double cube, double vector) {
  if (device < 0 || device >= kMaxDevices) return;
  factors()[device].cube.store(cube >= 1.0 ? cube : 1.0, std::memory_order_relaxed);
  factors()[device].vector.store(vector >= 1.0 ? vector : 1.0, std::memory_order_relaxed);
}

perf::Cost applyCoreLimits(int device, perf::Cost cost) noexcept {
  if (device < 0 || device >= kMaxDevices) return cost;
  double factor = 1.0;
  if (cost.unit == perf::Unit::kCube) factor = factors()[device].cube.load(std::memory_order_relaxed);
  if (cost.unit == perf::Unit::kVector) factor = factors()[device].vector.load(std::memory_order_relaxed);
  if (factor > 1.0) cost.deviceNs = static_cast<runtime::SimTimeNs>(std::llround(double(cost.deviceNs) * factor));
  return cost;
}

}  // namespace npusim::backend
