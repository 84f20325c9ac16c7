#include "perf/CostModel.h"

#include <algorithm>
#include <cmath>

#include "perf/Calibration.h"
#include "perf/GemmModel.h"
#include "perf/VectorModel.h"

namespace npusim::perf {
namespace {

namespace cal = calibration;

constexpr TensorDesc kAbsent{};

constexpr int64_t roundUp(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b * b : a; }

runtime::SimTimeNs toNs(double seconds) noexcept {
  if (!(seconds > 0)) return 0;  // also NaN
  const double ns = std::round(seconds * 1e9);
  return ns >= 1.8e19 ? runtime::SimTimeNs(1.8e19) : runtime::SimTimeNs(ns);
}

double sumBytes(const TensorDesc* tensors, int count) noexcept {
  double bytes = 0;
  for (int i = 0; tensors != nullptr && i < count; ++i) bytes += tensors[i].bytes();
  return bytes;
}

double maxNumel(const TensorDesc* tensors, int count) noexcept {
  double n = 0;
  for (int i = 0; tensors != nullptr && i < count; ++i) n = std::max(n, double(tensors[i].numel()));
  return n;
}

double sumNumel(const TensorDesc* tensors, int count) noexcept {
  double n = 0;
  for (int i = 0; tensors != nullptr && i < count; ++i) n += double(tensors[i].numel());
  return n;
}

// Product of dimensions [from, rank).
int64_t productFrom(const TensorDesc& t, int from) noexcept {
  int64_t p = 1;
  for (int d = from; d < t.rank; ++d) p *= std::max<int64_t>(t.size(d), 0);
  return p;
}

// The Cube precision of an operand type, or false when the Cube cannot
// multiply it (fp64, integers other than int8, complex: §6.4).
// Bytes per Cube operand element of a precision.
int operandBytesOf(CubePrecision precision) noexcept {
  switch (precision) {
    case CubePrecision::kHalf: return 2;
    case CubePrecision::kFloat32:
    case CubePrecision::kHf32: return 4;
    case CubePrecision::kInt8: return 1;
  }
  return 2;
}

// Options for a GEMM at a precision, every operand fetched whole from HBM.
GemmOptions gemmOptions(CubePrecision precision) noexcept {
  GemmOptions options;
  options.precision = precision;
  options.operandBytes = operandBytesOf(precision);
  return options;
}

// 0 for an operand a recent kernel left in the L2, 1 otherwise.
double hbmFraction(const TensorDesc& t) noexcept { return t.l2Resident ? 0.0 : 1.0; }

bool cubePrecisionOf(DType type, bool allowHf32, CubePrecision& precision) noexcept {
  switch (type) {
    case DType::kFloat16:
    case DType::kBFloat16: precision = CubePrecision::kHalf; return true;
    case DType::kFloat32: precision = allowHf32 ? CubePrecision::kHf32 : CubePrecision::kFloat32; return true;
    case DType::kInt8:
    case DType::kUInt8: precision = CubePrecision::kInt8; return true;
    default: return false;
  }
}

// The type the vector unit computes in: the widest floating type involved
// (bf16 ranks with fp32), else the widest type.
DType computeTypeOf(const TensorDesc* inputs, int inputCount, const TensorDesc* outputs, int outputCount) noexcept {
  DType best = DType::kOther;
  int bestRank = -1;
  auto consider = [&](const TensorDesc& t) {
    if (!t.defined()) return;
    const int width = t.dtype == DType::kBFloat16 ? 4 : elementSize(t.dtype);
    const int rank = (isFloatingPoint(t.dtype) ? 100 : 0) + width;
    if (rank > bestRank) {
      bestRank = rank;
      best = t.dtype;
    }
  };
  for (int i = 0; inputs != nullptr && i < inputCount; ++i) consider(inputs[i]);
  for (int i = 0; outputs != nullptr && i < outputCount; ++i) consider(outputs[i]);
  return bestRank < 0 ? DType::kFloat32 : best;
}

// A tensor read with short bursts: its contiguous dimension is not the last.
bool readsStrided(const TensorDesc& t) noexcept {
  if (!t.defined() || t.rank <= 1 || t.isContiguous()) return false;
  return t.innermostDimension() != t.rank - 1;
}

// 5HD pads the channel dimension of each group to C0 = 16 (§6.2).
double channelPadFactor(int64_t channels, int64_t groups) noexcept {
  if (channels <= 0 || groups <= 0) return 1.0;
  const int64_t perGroup = channels / groups;
  if (perGroup <= 0) return 1.0;
  return double(roundUp(perGroup, cal::kFractal) * groups) / double(channels);
}

struct MatmulGeometry {
  bool valid = false;
  GemmShape shape;
  const TensorDesc* a = &kAbsent;
  const TensorDesc* b = &kAbsent;
  const TensorDesc* extra = &kAbsent;
};

struct ConvolutionGeometry {
  bool valid = false;
  bool transposed = false;
  bool depthwise = false;
  int64_t groups = 1;
  int64_t positions = 0;     // P: output positions (transposed: input positions) times batch
  int64_t xChannels = 0;     // per group, the im2col side of the forward GEMM
  int64_t yChannels = 0;     // per group, the other side
  int64_t kernelElements = 1;
  double usefulFlops = 0;    // 2 * P * cx * cy * k * groups
  double inputPad = 1;       // 5HD padding of the activation tensors
  double outputPad = 1;
};

}  // namespace

struct detail::PriceRequest {
  OperatorKind kind;
  const TensorDesc* inputs;
  int inputCount;
  const TensorDesc* outputs;
  int outputCount;
  Placement placement;
  const CostOptions* options;
  const int64_t* intArgs;
  int intArgCount;

  const TensorDesc& input(int i) const noexcept {
    return inputs != nullptr && i >= 0 && i < inputCount ? inputs[i] : kAbsent;
  }
  const TensorDesc& output(int i) const noexcept {
    return outputs != nullptr && i >= 0 && i < outputCount ? outputs[i] : kAbsent;
  }
  bool hasIntArg(int i) const noexcept { return intArgs != nullptr && i >= 0 && i < intArgCount; }
  int64_t intArg(int i, int64_t fallback) const noexcept { return hasIntArg(i) ? intArgs[i] : fallback; }
};

namespace {

MatmulGeometry matmulGeometry(const detail::PriceRequest& r) noexcept;
ConvolutionGeometry convolutionGeometry(const detail::PriceRequest& r, bool backward) noexcept;

// A convolution's Cube kernel: the GEMM it lowers to, its Cube time
// stretched by the convolution efficiency (Calibration.h).
double convolutionSeconds(const GemmEstimate& gemm) noexcept {
  const double cube = gemm.cubeSeconds / cal::kConvolutionCubeEfficiency;
  return cal::kCubeKernelOverheadNs * 1e-9 + std::max(cube, gemm.memorySeconds);
}

}  // namespace

// ------------------------------------------------------------------- API

CostModel::CostModel(const runtime::ChipSpec& chip) : rates_(ChipRates::fromChip(chip)) {}

Cost CostModel::price(OperatorKind kind, const TensorDesc* inputs, int inputCount, const TensorDesc* outputs,
                      int outputCount, Placement placement, const CostOptions& options, const int64_t* intArgs,
                      int intArgCount) const noexcept {
  const Request request{kind,      inputs,  std::max(0, inputCount), outputs, std::max(0, outputCount),
                        placement, &options, intArgs, std::max(0, intArgCount)};
  if (kind == OperatorKind::kView) return Cost{};  // no kernel, wherever it is placed
  switch (placement) {
    case Placement::kAiCpu: return priceAiCpu(request);
    case Placement::kCpuFallback: return priceCpuFallback(request);
    case Placement::kAiCore: break;
  }
  return priceAiCore(request);
}

Cost CostModel::transfer(Transfer kind, uint64_t bytes, bool pinnedHost) const noexcept {
  if (kind == Transfer::kHostToDevice || kind == Transfer::kDeviceToHost) {
    Cost cost;
    cost.unit = Unit::kTransfer;
    cost.bytes = static_cast<double>(bytes);
    cost.deviceNs = kind == Transfer::kHostToDevice ? hostToDevice(bytes, pinnedHost) : deviceToHost(bytes, pinnedHost);
    return cost;
  }
  const int64_t elements = static_cast<int64_t>(bytes);
  TensorDesc desc;
  desc.sizes = &elements;
  desc.rank = 1;
  desc.dtype = DType::kUInt8;
  const bool reads = kind == Transfer::kDeviceToDevice;
  return price(OperatorKind::kDataMovement, reads ? &desc : nullptr, reads ? 1 : 0, &desc, 1, Placement::kAiCore,
               CostOptions{});
}

runtime::SimTimeNs CostModel::hostToDevice(uint64_t bytes, bool pinned) const noexcept {
  if (bytes == 0) return 0;
  const double fraction = pinned ? cal::kPinnedPcieFraction : cal::kPageablePcieFraction;
  const double latency = pinned ? cal::kPinnedCopyLatencyNs : cal::kPageableCopyLatencyNs;
  return toNs(latency * 1e-9 + double(bytes) / (rates_.pcieBytesPerSecond * fraction));
}

runtime::SimTimeNs CostModel::deviceToHost(uint64_t bytes, bool pinned) const noexcept {
  // The link is symmetric; the same staging applies in the other direction.
  return hostToDevice(bytes, pinned);
}

runtime::SimTimeNs CostModel::hostDispatchNs(int taskQueueLevel) const noexcept {
  switch (std::clamp(taskQueueLevel, 0, 2)) {
    case 0: return toNs(cal::kDispatchSynchronousNs * 1e-9);
    case 1: return toNs(cal::kDispatchTaskQueueNs * 1e-9);
    default: return toNs(cal::kDispatchTaskQueueLevel2Ns * 1e-9);
  }
}

runtime::SimTimeNs CostModel::hostDispatchNs(int taskQueueLevel, OperatorKind kind) const noexcept {
  if (kind == OperatorKind::kView) return toNs(cal::kDispatchViewNs * 1e-9);
  if (kind == OperatorKind::kAttention || kind == OperatorKind::kAttentionBackward) {
    return hostDispatchNs(taskQueueLevel) + toNs(cal::kDispatchAttentionExtraNs * 1e-9);
  }
  return hostDispatchNs(taskQueueLevel);
}

runtime::SimTimeNs CostModel::kernelFloorNs() const noexcept { return toNs(cal::kKernelFloorNs * 1e-9); }

// ------------------------------------------------------------- AI Core

Cost CostModel::priceAiCore(const Request& r) const noexcept {
  switch (r.kind) {
    case OperatorKind::kMatmul:
    case OperatorKind::kBatchedMatmul:
    case OperatorKind::kAddMatmul:
    case OperatorKind::kLinear: return priceMatmul(r);
    case OperatorKind::kConvolution: return priceConvolution(r);
    case OperatorKind::kConvolutionBackward: return priceConvolutionBackward(r);
    case OperatorKind::kAttention: return priceAttention(r, false);
    case OperatorKind::kAttentionBackward: return priceAttention(r, true);
    case OperatorKind::kView: return Cost{};
    default: return priceVectorKind(r);
  }
}

namespace {

MatmulGeometry matmulGeometry(const detail::PriceRequest& r) noexcept {
  MatmulGeometry g;
  switch (r.kind) {
    case OperatorKind::kAddMatmul:
      g.extra = &r.input(0);
      g.a = &r.input(1);
      g.b = &r.input(2);
      break;
    case OperatorKind::kLinear:
      g.a = &r.input(0);
      g.b = &r.input(1);
      g.extra = &r.input(2);
      break;
    default:
      g.a = &r.input(0);
      g.b = &r.input(1);
      break;
  }
  const TensorDesc& a = *g.a;
  const TensorDesc& b = *g.b;
  if (!a.defined() || !b.defined()) return g;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  if (r.kind == OperatorKind::kLinear) {
    k = a.size(-1);
    m = k > 0 ? a.numel() / k : 0;
    n = b.rank >= 2 ? b.size(0) : 1;
  } else if (a.rank <= 1 && b.rank <= 1 && r.output(0).numel() > 1) {
    m = a.numel();  // outer product
    n = b.numel();
    k = 1;
  } else {
    k = a.size(-1);
    m = a.rank >= 2 ? a.size(-2) : 1;
    n = b.rank >= 2 ? b.size(-1) : 1;
    // In floating point: absurd shapes must not overflow.
    const double mk = double(m) * double(k), kn = double(k) * double(n);
    const double batchA = mk > 0 ? double(a.numel()) / mk : 0;
    const double batchB = kn > 0 ? double(b.numel()) / kn : 0;
    batch = std::max<int64_t>(1, int64_t(std::min(std::max(batchA, batchB), 1e15)));
  }
  g.shape = GemmShape{batch, m, n, k};
  g.valid = true;
  return g;
}

ConvolutionGeometry convolutionGeometry(const detail::PriceRequest& r, bool backward) noexcept {
  namespace args = convolution_args;
  ConvolutionGeometry g;
  const TensorDesc& input = backward ? r.input(1) : r.input(0);
  const TensorDesc& weight = backward ? r.input(2) : r.input(1);
  const TensorDesc& output = backward ? r.input(0) : r.output(0);
  if (!input.defined() || !weight.defined() || weight.rank < 3) return g;
  const bool batched = input.rank == weight.rank;
  const int channelDim = batched ? 1 : 0;
  const int64_t batch = batched ? input.size(0) : 1;
  const int64_t inChannels = input.size(channelDim);
  g.transposed = r.intArg(args::kTransposed, 0) != 0;
  int64_t groups = 1;
  if (!g.transposed && weight.size(1) > 0 && inChannels % weight.size(1) == 0) groups = inChannels / weight.size(1);
  g.groups = std::max<int64_t>(1, r.intArg(args::kGroups, groups));
  g.kernelElements = productFrom(weight, 2);
  const int64_t inPositions = productFrom(input, channelDim + 1);
  const int64_t outPositions = output.defined() ? productFrom(output, channelDim + 1) : inPositions;
  const int64_t outChannels = output.defined() ? output.size(channelDim) : 0;
  if (!g.transposed) {
    g.positions = batch * outPositions;
    g.xChannels = weight.size(1);
    g.yChannels = weight.size(0) / g.groups;
  } else {
    g.positions = batch * inPositions;
    g.xChannels = weight.size(0) / g.groups;  // input channels per group
    g.yChannels = weight.size(1);             // output channels per group
  }
  g.depthwise = !g.transposed && g.xChannels == 1 && g.groups > 1;
  g.usefulFlops = 2.0 * double(g.positions) * double(g.xChannels) * double(g.yChannels) * double(g.kernelElements) *
                  double(g.groups);
  g.inputPad = channelPadFactor(inChannels, g.groups);
  g.outputPad = channelPadFactor(outChannels > 0 ? outChannels : g.yChannels * g.groups, g.groups);
  g.valid = g.positions > 0 && g.xChannels > 0 && g.yChannels > 0;
  return g;
}

// Extra kernels to bring an ND matrix operand into the fractal layout
// (§6.2): a contiguous copy when neither of its last two dimensions is the
// contiguous one, a TransData pad when the contiguous one is not a multiple
// of 16 elements. Returns seconds; adds the bytes moved.
double operandLayoutSeconds(const ChipRates& rates, const TensorDesc& t, double& bytes) noexcept {
  if (!t.defined() || t.rank < 2 || t.numel() == 0) return 0;
  const int inner = t.innermostDimension();
  const double floor = cal::kKernelFloorNs * 1e-9;
  if (inner != t.rank - 1 && inner != t.rank - 2) {
    const double moved = 2.0 * t.bytes();
    bytes += moved;
    return floor + moved / (rates.hbmBytesPerSecond * cal::kStridedBandwidthFraction);
  }
  const int64_t contiguous = t.size(inner);
  if (contiguous % cal::kFractal == 0) return 0;
  const double padded = t.bytes() * double(roundUp(contiguous, cal::kFractal)) / double(contiguous);
  bytes += t.bytes() + padded;
  return floor + (t.bytes() + padded) / rates.hbmBytesPerSecond;
}

}  // namespace

Cost CostModel::priceMatmul(const Request& r) const noexcept {
  const MatmulGeometry g = matmulGeometry(r);
  if (!g.valid) return priceVectorKind(r);
  const bool allowHf32 = r.options->allowHf32Matmul;
  CubePrecision precision;
  if (!cubePrecisionOf(g.a->dtype, allowHf32, precision)) return priceAiCpu(r);

  const DType outType = r.output(0).defined() ? r.output(0).dtype : g.a->dtype;
  GemmTraffic traffic;
  traffic.bytesA = g.a->bytes();
  traffic.bytesB = g.b->bytes();
  traffic.bytesOut = double(g.shape.batch) * double(g.shape.m) * double(g.shape.n) * elementSize(outType);
  traffic.bytesOther = g.extra->bytes();
  GemmOptions options = gemmOptions(precision);
  options.hbmFractionA = hbmFraction(*g.a);
  options.hbmFractionB = hbmFraction(*g.b);
  const GemmEstimate gemm = estimateGemm(rates_, g.shape, traffic, options);

  double bytes = gemm.bytes;
  double seconds = gemm.seconds;
  seconds += operandLayoutSeconds(rates_, *g.a, bytes);
  seconds += operandLayoutSeconds(rates_, *g.b, bytes);
  return Cost{toNs(seconds), Unit::kCube, gemm.flops, bytes, 0, false};
}

Cost CostModel::priceConvolution(const Request& r) const noexcept {
  const ConvolutionGeometry g = convolutionGeometry(r, false);
  if (!g.valid) return priceVectorKind(r);
  const TensorDesc& input = r.input(0);
  const TensorDesc& weight = r.input(1);
  const TensorDesc& bias = r.input(2);
  const TensorDesc& output = r.output(0);
  const double outputBytes = output.defined() ? output.bytes()
                                              : double(g.positions) * double(g.yChannels * g.groups) *
                                                    elementSize(input.dtype);
  if (g.depthwise) {
    // Depthwise convolutions have one input channel per group: no GEMM to
    // speak of; they run as multiply-accumulates on the vector unit.
    VectorWork work;
    work.bytes = input.bytes() + weight.bytes() + outputBytes + bias.bytes();
    work.elements = double(g.positions) * double(g.yChannels * g.groups) * double(g.kernelElements);
    work.opsPerElement = cal::kOpsElementwise;
    work.computeType = input.dtype;
    const VectorEstimate v = estimateVector(rates_, work);
    return Cost{toNs(cal::kKernelFloorNs * 1e-9 + v.seconds), Unit::kVector, g.usefulFlops, work.bytes, 0, false};
  }
  CubePrecision precision;
  if (!cubePrecisionOf(input.dtype, r.options->allowHf32Conv, precision)) return priceAiCpu(r);

  GemmShape shape;
  if (!g.transposed) {
    shape = GemmShape{g.groups, g.positions, g.yChannels, roundUp(g.xChannels, cal::kFractal) * g.kernelElements};
  } else {
    shape = GemmShape{g.groups, g.positions, roundUp(g.yChannels, cal::kFractal) * g.kernelElements,
                      roundUp(g.xChannels, cal::kFractal)};
  }
  GemmTraffic traffic;
  traffic.bytesA = input.bytes() * g.inputPad;
  traffic.bytesB = weight.bytes();
  traffic.bytesOut = outputBytes * g.outputPad;
  traffic.bytesOther = bias.bytes();
  GemmOptions options = gemmOptions(precision);
  if (!g.transposed) options.fetchScaleA = 1.0 / double(g.kernelElements);  // im2col built in L1
  const GemmEstimate gemm = estimateGemm(rates_, shape, traffic, options);
  return Cost{toNs(convolutionSeconds(gemm)), Unit::kCube, g.usefulFlops, gemm.bytes, 0, false};
}

Cost CostModel::priceConvolutionBackward(const Request& r) const noexcept {
  namespace args = convolution_args;
  const ConvolutionGeometry g = convolutionGeometry(r, true);
  if (!g.valid) return priceVectorKind(r);
  const TensorDesc& gradOutput = r.input(0);
  const TensorDesc& input = r.input(1);
  const TensorDesc& weight = r.input(2);

  int64_t mask = args::kGradInput | args::kGradWeight | args::kGradBias;
  if (r.hasIntArg(args::kOutputMask)) {
    mask = r.intArg(args::kOutputMask, mask);
  } else if (r.outputCount > 0) {
    mask = 0;
    for (int i = 0; i < 3; ++i) {
      if (r.output(i).defined()) mask |= int64_t(1) << i;
    }
  }
  CubePrecision precision;
  if (!cubePrecisionOf(gradOutput.dtype, r.options->allowHf32Conv, precision)) return priceAiCpu(r);

  const int64_t cx = roundUp(g.xChannels, cal::kFractal);
  const int64_t cy = roundUp(g.yChannels, cal::kFractal);
  const int64_t k = g.kernelElements;
  // Activations in 5HD: the non-transposed input side pads as the forward
  // input did, the gradient side as the forward output did.
  const double inputBytes = input.bytes() * g.inputPad;
  const double gradOutputBytes = gradOutput.bytes() * g.outputPad;
  const TensorDesc& gradWeight = r.output(1);
  const double gradWeightBytes =
      gradWeight.defined() ? gradWeight.bytes() : double(weight.numel()) * elementSize(weight.dtype);

  double seconds = 0, bytes = 0, flops = 0;
  const double floor = cal::kKernelFloorNs * 1e-9;
  if (mask & args::kGradInput) {
    // Non-transposed: dX_col = dY * W^T (P x cx*k), then col2im.
    // Transposed: the gradient of its input is an ordinary convolution of dY.
    const GemmShape shape = g.transposed ? GemmShape{g.groups, g.positions, g.xChannels, cy * k}
                                         : GemmShape{g.groups, g.positions, cx * k, g.yChannels};
    const GemmTraffic traffic{gradOutputBytes, weight.bytes(), inputBytes, 0};
    GemmOptions options = gemmOptions(precision);
    if (g.transposed) options.fetchScaleA = 1.0 / double(k);  // im2col of dY built in L1
    const GemmEstimate gemm = estimateGemm(rates_, shape, traffic, options);
    seconds += convolutionSeconds(gemm);
    bytes += gemm.bytes;
    flops += g.usefulFlops;
  }
  if (mask & args::kGradWeight) {
    // dW = dY^T * X_col over all positions: a long-K GEMM (split K).
    const GemmShape shape = g.transposed ? GemmShape{g.groups, g.xChannels, cy * k, g.positions}
                                         : GemmShape{g.groups, g.yChannels, cx * k, g.positions};
    const GemmTraffic traffic{gradOutputBytes, inputBytes, gradWeightBytes, 0};
    GemmOptions options = gemmOptions(precision);
    options.fetchScaleB = 1.0 / double(k);  // im2col of X (or dY) built in L1
    const GemmEstimate gemm = estimateGemm(rates_, shape, traffic, options);
    seconds += convolutionSeconds(gemm);
    bytes += gemm.bytes;
    flops += g.usefulFlops;
  }
  if (mask & args::kGradBias) {
    VectorWork work;
    work.bytes = gradOutput.bytes() + r.output(2).bytes();
    work.elements = double(gradOutput.numel());
    work.opsPerElement = cal::kOpsReduction;
    work.computeType = gradOutput.dtype;
    const VectorEstimate v = estimateVector(rates_, work);
    seconds += floor + v.seconds;
    bytes += work.bytes;
  }
  if (mask == 0) seconds = floor;
  return Cost{toNs(seconds), Unit::kCube, flops, bytes, 0, false};
}

Cost CostModel::priceAttention(const Request& r, bool backward) const noexcept {
  namespace args = attention_args;
  const int first = backward ? 1 : 0;
  const TensorDesc& q = r.input(first);
  const TensorDesc& k = r.input(first + 1);
  const TensorDesc& v = r.input(first + 2);
  if (!q.defined() || !k.defined() || q.rank < 2) return priceVectorKind(r);

  const auto layout = AttentionLayout(r.intArg(args::kLayout, int64_t(AttentionLayout::kBNSD)));
  const int64_t heads = r.intArg(args::kHeads, 0);
  int64_t batch = 1, queryHeads = 1, sq = 0, sk = 0, headDim = 0;
  if (q.rank == 4 && layout == AttentionLayout::kBSND) {
    batch = q.size(0), sq = q.size(1), queryHeads = q.size(2), headDim = q.size(3), sk = k.size(1);
  } else if (q.rank == 4) {
    batch = q.size(0), queryHeads = q.size(1), sq = q.size(2), headDim = q.size(3), sk = k.size(2);
  } else if (q.rank == 3 && (layout == AttentionLayout::kBSH || layout == AttentionLayout::kSBH)) {
    queryHeads = std::max<int64_t>(1, heads);
    if (layout == AttentionLayout::kBSH) {
      batch = q.size(0), sq = q.size(1), sk = k.size(1);
    } else {
      sq = q.size(0), batch = q.size(1), sk = k.size(0);
    }
    headDim = q.size(2) / queryHeads;
  } else if (q.rank == 3) {
    queryHeads = q.size(0), sq = q.size(1), headDim = q.size(2), sk = k.size(1);
  } else {
    sq = q.size(0), headDim = q.size(1), sk = k.size(0);
  }
  const int64_t valueDim = v.defined() && v.rank == q.rank && layout != AttentionLayout::kBSH &&
                                   layout != AttentionLayout::kSBH
                               ? v.size(-1)
                               : headDim;
  CubePrecision precision;
  if (!cubePrecisionOf(q.dtype, false, precision)) return priceAiCpu(r);
  if (batch <= 0 || queryHeads <= 0 || sq <= 0 || sk <= 0 || headDim <= 0) {
    return Cost{kernelFloorNs(), Unit::kCube, 0, 0, 0, false};
  }

  // Causal masking (bottom-right aligned) skips the blocks above the diagonal.
  double fraction = 1.0;
  if (r.intArg(args::kCausal, 0) != 0) {
    const double attended = double(sq) * double(std::max<int64_t>(0, sk - sq)) + double(std::min(sq, sk)) *
                                                                                       double(std::min(sq, sk) + 1) /
                                                                                       2.0;
    fraction = std::clamp(attended / (double(sq) * double(sk)), 0.0, 1.0);
  }
  // The kernel is parallel over batch x heads x query blocks: one AI Cube
  // core (with its two AI Vector cores) takes a block of query rows through
  // every key block in turn (the online softmax is sequential over keys), so
  // a short query or few heads leave cores idle.
  const int64_t heads2d = batch * queryHeads;
  const double queryBlock = double(std::min<int64_t>(roundUp(sq, cal::kFractal), cal::kFlashQueryBlock));
  const double blocks = double(heads2d) * std::ceil(double(sq) / queryBlock);
  const double waves = std::ceil(blocks / double(std::max(1, rates_.cubeCores)));
  const double keys = double(roundUp(sk, cal::kFractal)) * fraction;  // average keys per block
  const double macs = rates_.macsPerCycle(precision);
  const double blockCubeCycles =
      queryBlock * keys * double(roundUp(headDim, cal::kFractal) + roundUp(valueDim, cal::kFractal)) / macs;
  // Score elements per block on the core's AI Vector cores (§2.2: 2 per AIC).
  const double vectorsPerBlock = double(rates_.vectorCores) / double(std::max(1, rates_.cubeCores));
  const double blockVectorCycles = queryBlock * keys * cal::kFlashOpsPerScore * cal::kBinaryCyclesPerRepeat /
                                   (elementsPerRepeat(rates_, DType::kFloat32) * vectorsPerBlock);
  double cube = waves * blockCubeCycles / rates_.clockHz;
  double vector = waves * blockVectorCycles / rates_.clockHz;
  double flops = 2.0 * double(heads2d) * double(sq) * double(sk) * double(headDim + valueDim) * fraction;
  if (backward) {
    cube *= cal::kFlashBackwardCubeFactor;
    flops *= cal::kFlashBackwardCubeFactor;
    vector *= cal::kFlashBackwardVectorFactor;
  }
  const double bytes = sumBytes(r.inputs, r.inputCount) + sumBytes(r.outputs, r.outputCount);
  const double memory = bytes / rates_.hbmBytesPerSecond;
  const double seconds = cal::kCubeKernelOverheadNs * 1e-9 + std::max({cube, vector, memory});
  return Cost{toNs(seconds), vector > cube ? Unit::kVector : Unit::kCube, flops, bytes, 0, false};
}

// ------------------------------------------------------------- Vector kinds

Cost CostModel::priceVectorKind(const Request& r) const noexcept {
  const double inBytes = sumBytes(r.inputs, r.inputCount);
  const double outBytes = sumBytes(r.outputs, r.outputCount);
  const double inElements = maxNumel(r.inputs, r.inputCount);
  const double outElements = maxNumel(r.outputs, r.outputCount);
  VectorWork work;
  work.computeType = computeTypeOf(r.inputs, r.inputCount, r.outputs, r.outputCount);
  work.bytes = inBytes + outBytes;
  work.elements = std::max(inElements, outElements);
  work.opsPerElement = cal::kOpsElementwise;
  switch (r.kind) {
    case OperatorKind::kActivation: work.opsPerElement = cal::kOpsActivation; break;
    case OperatorKind::kReduction:
      work.elements = inElements;
      work.opsPerElement = cal::kOpsReduction;
      break;
    case OperatorKind::kNormalization:
      // Statistics, then normalisation: the inputs are read twice (Ascend's
      // BNTrainingReduce + BNTrainingUpdate, and their gradients).
      work.bytes = 2.0 * inBytes + outBytes;
      work.elements = inElements;
      work.opsPerElement = cal::kOpsNormalization;
      break;
    case OperatorKind::kSoftmax: work.opsPerElement = cal::kOpsSoftmax; break;
    case OperatorKind::kPooling: work.opsPerElement = cal::kOpsPooling; break;
    case OperatorKind::kDataMovement: {
      work.elements = outElements > 0 ? outElements : inElements;
      work.opsPerElement = 0.5;  // unary: one repeat per cycle (§2.3)
      bool strided = false;
      for (int i = 0; i < r.inputCount; ++i) strided = strided || readsStrided(r.input(i));
      for (int i = 0; i < r.outputCount; ++i) strided = strided || readsStrided(r.output(i));
      if (strided) work.bandwidthFraction = cal::kStridedBandwidthFraction;
      break;
    }
    case OperatorKind::kIndexing: {
      // The source table (first input) is read only where indexed: about the
      // size of what is written.
      const double table = r.input(0).bytes();
      work.bytes = (inBytes - table) + std::min(table, outBytes) + outBytes;
      work.opsPerElement = cal::kOpsIndexing;
      work.bandwidthFraction = cal::kStridedBandwidthFraction;
      break;
    }
    case OperatorKind::kSort: {
      // Vector bitonic sort of 32-element runs, then 4-way merge passes
      // (VBS / VMS4), each reading and writing values and indices.
      const double row = double(std::max<int64_t>(1, r.input(0).size(-1)));
      const double passes = 1.0 + std::ceil(std::log(std::max(1.0, row / 32.0)) / std::log(4.0));
      work.elements = inElements * passes;
      work.bytes = passes * (inBytes + std::max(outBytes, inBytes));
      work.opsPerElement = 2.0;
      break;
    }
    case OperatorKind::kRandom: work.opsPerElement = cal::kOpsRandom; break;
    case OperatorKind::kFactory:
      work.bytes = outBytes;
      work.elements = outElements;
      work.opsPerElement = 0.5;
      break;
    case OperatorKind::kOptimizerFused:
      work.elements = sumNumel(r.outputs, r.outputCount);
      if (work.elements == 0) work.elements = sumNumel(r.inputs, r.inputCount);
      work.opsPerElement = cal::kOpsOptimizer / 3.0;  // per written element (param, two moments)
      break;
    default: break;
  }
  // Inputs a recent kernel left in the L2 are read from there (their share
  // of the bytes read).
  double residentBytes = 0;
  for (int i = 0; i < r.inputCount; ++i) {
    if (r.input(i).l2Resident) residentBytes += r.input(i).bytes();
  }
  if (residentBytes > 0 && inBytes > 0 && r.kind != OperatorKind::kFactory) {
    const double readBytes = std::max(0.0, work.bytes - outBytes);
    work.l2Bytes = readBytes * std::min(1.0, residentBytes / inBytes);
    work.bytes -= work.l2Bytes;
  }
  const VectorEstimate v = estimateVector(rates_, work);
  return Cost{toNs(cal::kKernelFloorNs * 1e-9 + v.seconds), Unit::kVector, work.elements * work.opsPerElement,
              work.bytes, 0, false};
}

// ------------------------------------------------- AI CPU and CPU fallback

double CostModel::arithmetic(const Request& r) const noexcept {
  switch (r.kind) {
    case OperatorKind::kMatmul:
    case OperatorKind::kBatchedMatmul:
    case OperatorKind::kAddMatmul:
    case OperatorKind::kLinear: {
      const MatmulGeometry g = matmulGeometry(r);
      if (g.valid) return 2.0 * double(g.shape.batch) * double(g.shape.m) * double(g.shape.n) * double(g.shape.k);
      break;
    }
    case OperatorKind::kConvolution: {
      const ConvolutionGeometry g = convolutionGeometry(r, false);
      if (g.valid) return g.usefulFlops;
      break;
    }
    case OperatorKind::kConvolutionBackward: {
      const ConvolutionGeometry g = convolutionGeometry(r, true);
      if (g.valid) return 2.0 * g.usefulFlops;
      break;
    }
    case OperatorKind::kAttention:
    case OperatorKind::kAttentionBackward: {
      const int first = r.kind == OperatorKind::kAttentionBackward ? 1 : 0;
      const TensorDesc& q = r.input(first);
      const TensorDesc& k = r.input(first + 1);
      const double factor = r.kind == OperatorKind::kAttentionBackward ? 2.5 : 1.0;
      // 4 * (query elements) * (keys), the keys read as the second-last
      // dimension of k (BNSD, BSH); an approximation for other layouts.
      if (q.defined() && k.defined() && q.rank >= 2) return factor * 4.0 * double(q.numel()) * double(k.size(-2));
      break;
    }
    case OperatorKind::kView: return 0;
    default: break;
  }
  const double elements = std::max(maxNumel(r.inputs, r.inputCount), maxNumel(r.outputs, r.outputCount));
  double ops = cal::kOpsElementwise;
  switch (r.kind) {
    case OperatorKind::kActivation: ops = cal::kOpsActivation; break;
    case OperatorKind::kNormalization: ops = cal::kOpsNormalization; break;
    case OperatorKind::kSoftmax: ops = cal::kOpsSoftmax; break;
    case OperatorKind::kRandom: ops = cal::kOpsRandom; break;
    case OperatorKind::kOptimizerFused: ops = cal::kOpsOptimizer; break;
    case OperatorKind::kSort: ops = std::max(1.0, std::log2(std::max(2.0, elements))); break;
    default: break;
  }
  return elements * ops;
}

Cost CostModel::priceAiCpu(const Request& r) const noexcept {
  const double bytes = sumBytes(r.inputs, r.inputCount) + sumBytes(r.outputs, r.outputCount);
  const double work = arithmetic(r);
  const double cores = double(std::max(1, rates_.aiCpuCores));
  const double seconds = cal::kAiCpuLaunchNs * 1e-9 + bytes / (cores * cal::kAiCpuBytesPerSecondPerCore) +
                         work / (cores * cal::kAiCpuFlopsPerSecondPerCore);
  return Cost{toNs(seconds), Unit::kAiCpu, work, bytes, 0, true};
}

Cost CostModel::priceCpuFallback(const Request& r) const noexcept {
  const double inBytes = sumBytes(r.inputs, r.inputCount);
  const double outBytes = sumBytes(r.outputs, r.outputCount);
  const double work = arithmetic(r);
  const double toHost = double(deviceToHost(uint64_t(inBytes), false)) * 1e-9;
  const double toDevice = double(hostToDevice(uint64_t(outBytes), false)) * 1e-9;
  const double compute = cal::kCpuFallbackOverheadNs * 1e-9 + (inBytes + outBytes) / cal::kHostBytesPerSecond +
                         work / cal::kHostFlopsPerSecond;
  const runtime::SimTimeNs total = toNs(toHost + compute + toDevice);
  return Cost{total, Unit::kCpuFallback, work, inBytes + outBytes, total, true};
}

}  // namespace npusim::perf
