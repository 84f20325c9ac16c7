#include "perf/TensorDesc.h"

namespace npusim::perf {

int64_t TensorDesc::size(int dim) const noexcept {
  if (rank <= 0 || sizes == nullptr) return 1;
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return 1;
  return sizes[dim];
}

int64_t TensorDesc::stride(int dim) const noexcept {
  if (rank <= 0 || sizes == nullptr) return 1;
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return 1;
  if (strides != nullptr) return strides[dim];
  int64_t stride = 1;
  for (int d = rank - 1; d > dim; --d) stride *= sizes[d] > 0 ? sizes[d] : 1;
  return stride;
}

int64_t TensorDesc::numel() const noexcept {
  if (rank < 0) return 0;
  if (sizes == nullptr) return rank == 0 ? 1 : 0;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= sizes[d] > 0 ? sizes[d] : 0;
  return n;
}

bool TensorDesc::isContiguous() const noexcept {
  if (strides == nullptr || rank <= 0 || sizes == nullptr) return true;
  int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

int TensorDesc::innermostDimension() const noexcept {
  if (rank <= 0 || sizes == nullptr) return -1;
  if (strides == nullptr) return rank - 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (strides[d] == 1 && sizes[d] > 1) return d;
  }
  // All dimensions of size 1 or none with stride 1.
  for (int d = rank - 1; d >= 0; --d) {
    if (sizes[d] > 1) return -1;
  }
  return rank - 1;
}

}  // namespace npusim::perf
