// The FFT plan cache of torch_npu's FFT operators (torch.npu.backends.fft_plan_cache).
#pragma once

#include <cstdint>

namespace npusim::backend {

// Plans cached now, the capacity (1 to 99; 10 at start), and clearing, as
// op-plugin's FFTMixCache: a least-recently-used list of plans, one per
// transformed dimension, keyed by its length, direction, kind (c2c, r2c, c2r)
// and dtype. A capacity outside 1..99 is refused.
int64_t fftPlanCacheSize();
int64_t fftPlanCacheCapacity();
void setFftPlanCacheCapacity(int64_t capacity);
void clearFftPlanCache();

}  // namespace npusim::backend
