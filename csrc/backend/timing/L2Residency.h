// Which device buffers are still in the chip's L2 (§2.2 of the hardware
// reference: 192 MB on a 910B), so that the cost model reads an operand a
// recent kernel produced or read at L2 bandwidth instead of HBM bandwidth.
//
// The L2 is modelled as holding the most recently touched bytes: every
// kernel's HBM traffic pushes older lines out, and a buffer stays resident
// while the traffic since it was last touched plus its own size fits in the
// L2. Buffers are keyed by their storage's base address.
#pragma once

#include <ATen/core/Tensor.h>

namespace npusim::backend {

// A tensor's storage as the L2 model sees it (base null: no storage).
struct L2Buffer {
  const void* base = nullptr;
  double bytes = 0;
};
L2Buffer l2BufferOf(const c10::TensorImpl& tensor) noexcept;

// A kernel's operands, under one lock: resident[i] says whether buffers[i]
// was touched recently enough to still be in the L2 of `device`.
void queryL2Residency(int device, c10::ArrayRef<L2Buffer> buffers, bool* resident);

// A kernel read or wrote `buffers`: touched in order, they are now the most
// recent data in the L2. `traffic`: the kernel's HBM traffic, added first
// (as addL2Traffic would), under the same lock.
void touchL2(int device, c10::ArrayRef<L2Buffer> buffers, double traffic = 0);

// A kernel moved `bytes` through HBM on `device` (evicting older lines).
void addL2Traffic(int device, double bytes);

}  // namespace npusim::backend
