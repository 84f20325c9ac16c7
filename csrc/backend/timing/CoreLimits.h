// torch.npu.set_device_limit: kernels on a device may use only part of its
// Cube (AI Core) and Vector cores. npusim stretches the modelled time of a
// kernel by the share of cores it lost (all cores / allowed cores), for the
// unit the kernel runs on.
#pragma once

#include "perf/CostModel.h"

namespace npusim::backend {

// Factors >= 1 for `device`; 1 removes the limit.
void setCoreLimitFactors(int device, double cube, double vector);

// `cost` with its device time stretched by the limit of `device`.
perf::Cost applyCoreLimits(int device, perf::Cost cost) noexcept;

}  // namespace npusim::backend
