// The operator cost model: how long one operator call, one host<->device
// copy or one launch takes on the chosen chip.
//
// Built once per chip; price() is the hot path (no allocation, no strings).
// Every constant it uses is in Calibration.h with the public figure it rests
// on; chip numbers come from runtime::ChipSpec.
//
// Operands of price(), by kind (aten argument order; an absent optional
// tensor is TensorDesc::undefined() or simply left out at the end):
//   kMatmul, kBatchedMatmul   inputs (A, B)                 out (C)
//   kAddMatmul                inputs (C, A, B)              out (result)
//   kLinear                   inputs (x[..., K], W[N, K], bias?)
//   kConvolution              inputs (input, weight, bias?) out (output)
//       intArgs (optional): [0] transposed (0/1), [1] groups
//   kConvolutionBackward      inputs (grad_output, input, weight)
//                             outputs (grad_input, grad_weight, grad_bias);
//       intArgs (optional): [0] transposed, [1] groups, [2] output mask
//       (bit 0 grad_input, bit 1 grad_weight, bit 2 grad_bias). Without [2]
//       the mask is the set of defined outputs. Only requested parts are priced.
//   kAttention                inputs (q, k, v, ...)  out (attention output, ...)
//   kAttentionBackward        inputs (grad_out, q, k, v, ...) outputs (grad_q, grad_k, grad_v)
//       intArgs (optional): [0] causal (0/1), [1] layout (AttentionLayout),
//       [2] number of query heads (needed for BSH/SBH)
//   everything else           all tensors read as inputs, all tensors written as outputs
// Copies between the host and the device are not price() calls: use
// hostToDevice / deviceToHost.
#pragma once

#include <cstdint>

#include "perf/ChipRates.h"
#include "perf/OperatorKind.h"
#include "perf/TensorDesc.h"
#include "perf/Types.h"
#include "runtime/ChipSpec.h"
#include "runtime/Timeline.h"

namespace npusim::perf {

// Indices into intArgs.
namespace convolution_args {
inline constexpr int kTransposed = 0;
inline constexpr int kGroups = 1;
inline constexpr int kOutputMask = 2;
inline constexpr int64_t kGradInput = 1;
inline constexpr int64_t kGradWeight = 2;
inline constexpr int64_t kGradBias = 4;
}  // namespace convolution_args

namespace attention_args {
inline constexpr int kCausal = 0;
inline constexpr int kLayout = 1;
inline constexpr int kHeads = 2;
}  // namespace attention_args

// Layout of q/k/v: BNSD is PyTorch's scaled_dot_product_attention; the
// others are npu_fusion_attention's input_layout values.
enum class AttentionLayout : int64_t { kBNSD = 0, kBSND = 1, kBSH = 2, kSBH = 3 };

namespace detail {
struct PriceRequest;  // the arguments of one price() call
}  // namespace detail

struct Cost {
  runtime::SimTimeNs deviceNs = 0;  // time on the stream
  Unit unit = Unit::kNone;          // where it is spent
  double flops = 0;                 // Cube kinds: useful 2*m*n*k FLOPs; vector kinds: element operations
  double bytes = 0;                 // HBM (or PCIe) traffic
  // Host time the call itself blocks the host thread, beyond dispatch: a CPU
  // fallback computes on the host (equal to deviceNs, which it spans).
  runtime::SimTimeNs hostNs = 0;
  // The host must wait for the stream before this call (AI CPU work and CPU
  // fallbacks read their inputs back, §6.1).
  bool synchronizesHost = false;
};

struct CostOptions {
  bool allowHf32Matmul = false;  // torch.npu.matmul.allow_hf32 (default False)
  bool allowHf32Conv = true;     // torch.npu.conv.allow_hf32 (default True)
};

// A data transfer as both faces of npusim issue it (PyTorch's copies, AscendCL's memcpy/memset).
enum class Transfer { kHostToDevice, kDeviceToHost, kDeviceToDevice, kMemset };

class CostModel {
 public:
  explicit CostModel(const runtime::ChipSpec& chip);

  // The modelled duration of one operator call (hot path).
  Cost price(OperatorKind kind, const TensorDesc* inputs, int inputCount, const TensorDesc* outputs, int outputCount,
             Placement placement, const CostOptions& options, const int64_t* intArgs = nullptr,
             int intArgCount = 0) const noexcept;

  // Host<->device copies over PCIe. Pinned host memory is DMA'd directly;
  // pageable memory is staged (slower, see Calibration.h).
  runtime::SimTimeNs hostToDevice(uint64_t bytes, bool pinned) const noexcept;
  runtime::SimTimeNs deviceToHost(uint64_t bytes) const noexcept { return deviceToHost(bytes, false); }
  runtime::SimTimeNs deviceToHost(uint64_t bytes, bool pinned) const noexcept;
  // A transfer of `bytes`: PCIe for host<->device (by `pinnedHost`), a data-movement kernel
  // for a device copy (reads and writes `bytes`) or a memset (writes them).
  Cost transfer(Transfer kind, uint64_t bytes, bool pinnedHost) const noexcept;
  // Host cost of launching one operator; TASK_QUEUE_ENABLE 0 (synchronous),
  // 1 (default) or 2. Out-of-range levels are clamped.
  runtime::SimTimeNs hostDispatchNs(int taskQueueLevel) const noexcept;
  // As above, by operator kind: views and metadata-only operators launch no
  // kernel and cost less; fused attention costs more (its tiling).
  runtime::SimTimeNs hostDispatchNs(int taskQueueLevel, OperatorKind kind) const noexcept;
  // Minimum device time of any kernel.
  runtime::SimTimeNs kernelFloorNs() const noexcept;

  const ChipRates& rates() const noexcept { return rates_; }
  // Peak dense FLOP/s of the Cube at a precision (for MFU in reports).
  double peakFlops(CubePrecision precision) const noexcept { return rates_.peakFlops(precision); }

 private:
  using Request = detail::PriceRequest;
  Cost priceAiCore(const Request& request) const noexcept;
  Cost priceMatmul(const Request& request) const noexcept;
  Cost priceConvolution(const Request& request) const noexcept;
  Cost priceConvolutionBackward(const Request& request) const noexcept;
  Cost priceAttention(const Request& request, bool backward) const noexcept;
  Cost priceVectorKind(const Request& request) const noexcept;
  Cost priceAiCpu(const Request& request) const noexcept;
  Cost priceCpuFallback(const Request& request) const noexcept;
  // Arithmetic of an operator (FLOPs or element operations) for the AI CPU
  // and host estimates.
  double arithmetic(const Request& request) const noexcept;

  ChipRates rates_;
};

}  // namespace npusim::perf
