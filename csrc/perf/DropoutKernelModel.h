// Prices the mask generation of torch_npu's dropout. On the A2/A3 chips
// aclnnDropoutGenMaskV2 launches DSAGenBitMask (CANN ops-math
// random/dsa_gen_bit_mask): a task that writes one bit per element, the bit
// mask of ceil(n / 128) * 128 / 8 bytes that the apply kernel
// (DropOutDoMask) reads. The kernel draws one Philox number per element
// whatever it writes, so its work is npusim's Philox price per element (the
// price of bernoulli_ into a one-byte mask); its memory traffic is the bit
// mask only. No public source gives the DSA engine's own rate [I].
#pragma once

#include <cstdint>

#include "perf/ChipRates.h"
#include "perf/FusedKernelModel.h"

namespace npusim::perf {

// Bytes of the bit mask torch_npu's dropout generates for `elements` values
// (op-plugin's _npu_dropout: rounded up to whole 128-bit blocks).
int64_t dropoutBitMaskBytes(int64_t elements) noexcept;

// The mask generation for `elements` values (one launch).
FusedKernelCost priceDropoutMaskGeneration(const ChipRates& rates, int64_t elements) noexcept;

}  // namespace npusim::perf
