// What the cost model needs to know about one tensor: its shape, layout and
// element type. A view on the caller's arrays (an at::Tensor's sizes() and
// strides() data), so building one allocates nothing.
#pragma once

#include <cstdint>

#include "perf/Types.h"

namespace npusim::perf {

struct TensorDesc {
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;  // nullptr: contiguous (row-major)
  int rank = -1;                     // -1: no tensor (an absent bias, an output that was not requested)
  DType dtype = DType::kFloat32;
  // Written or read by a recent kernel and still in the L2 (§2.2): read at L2
  // bandwidth, not from HBM. The backend tracks it; the cost model only reads it.
  bool l2Resident = false;

  static constexpr TensorDesc undefined() noexcept { return TensorDesc{}; }

  bool defined() const noexcept { return rank >= 0; }
  // Size of dimension `dim`; negative counts from the end (-1 is the last).
  // Out-of-range dimensions read as 1 (a scalar broadcasts).
  int64_t size(int dim) const noexcept;
  // Stride of dimension `dim` in elements (computed when strides is null).
  int64_t stride(int dim) const noexcept;
  // Number of elements (1 for a rank-0 tensor, 0 for an undefined one).
  int64_t numel() const noexcept;
  // Bytes of the elements (not of the storage behind a view).
  double bytes() const noexcept { return double(numel()) * elementSize(dtype); }
  // Row-major contiguous (size-1 dimensions may have any stride).
  bool isContiguous() const noexcept;
  // The dimension with stride 1 that the hardware reads in bursts (the
  // innermost contiguous one); -1 if no dimension has stride 1.
  int innermostDimension() const noexcept;
};

}  // namespace npusim::perf
