// Dropout on npu (native_dropout, native_dropout_backward) as torch_npu runs it.
//
// Numbers: native_dropout has no generator argument, and its CPU kernel draws
// from the *CPU* default generator, so run by the operator executor it would
// ignore torch.npu.manual_seed (two seeded runs would differ, and an NPUGraph
// replay could not draw what eager mode draws). Here the steps of PyTorch's
// CPU kernel run on CPU aliases of the device memory: bernoulli_ into the bool
// mask from the npu generator's CPU state (so an npu and a CPU run seeded
// alike keep drawing the same numbers), then the scaling multiplications. The
// mask returned is PyTorch's bool mask, as its API requires.
//
// Time: what torch_npu launches (op-plugin NativeDropoutKernelNpuOpApi.cpp,
// _npu_dropout). The mask is generated on the device's *secondary* stream
// (c10_npu::getCurrentSecondaryStream under a SecondaryStreamGuard) by
// aclnnDropoutGenMaskV2, which on the A2/A3 chips is the DSAGenBitMask task: a
// bit mask of ceil(n / 128) * 128 / 8 bytes (perf/DropoutKernelModel.h). The
// guard's end records an event on the secondary stream that the original
// stream waits for; then aclnnDropoutDoMask (kernel DropOutDoMask) reads the
// input and the bit mask and writes the output, one pass. The mask needs
// nothing from the original stream, so it runs ahead of the work queued there.
// While a captured graph replays, the first mask generation of the replay
// waits for the original stream (torch_npu records that event once per
// capture, when the generator's secondary-stream capture state is first set).
// The backward is one DropOutDoMask over the gradient and the bit mask.
// Probabilities 0 and 1 launch no mask generation: torch_npu returns a copy
// and a filled mask (p = 0, or eval mode), or two zero fills (p = 1).
#include <ATen/ATen.h>
#include <torch/library.h>

#include "backend/device/NpuGenerator.h"
#include "backend/device/NpuStreams.h"
#include "backend/executor/KernelOperands.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/GraphLaunch.h"
#include "backend/timing/L2Residency.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "perf/DropoutKernelModel.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

// The kernel names torch_npu's profiler shows (CANN's op types).
constexpr const char* kMaskGenerationKernel = "DSAGenBitMask";
constexpr const char* kApplyMaskKernel = "DropOutDoMask";

// Makes `stream` the current stream of `device` for its lifetime (the
// secondary stream's share of SecondaryStreamGuard).
class ScopedStream {
 public:
  ScopedStream(int device, runtime::StreamId stream) noexcept : device_(device), previous_(currentStream(device)) {
    setCurrentStream(device, stream);
  }
  ~ScopedStream() { setCurrentStream(device_, previous_); }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;

 private:
  int device_;
  runtime::StreamId previous_;
};

// The bit mask as the cost model sees it: uint8, one dimension.
struct BitMaskDesc {
  int64_t bytes;
  perf::TensorDesc desc;
  explicit BitMaskDesc(int64_t elements) : bytes(perf::dropoutBitMaskBytes(elements)) {
    desc.sizes = &bytes;
    desc.rank = 1;
    desc.dtype = perf::DType::kUInt8;
  }
  BitMaskDesc(const BitMaskDesc&) = delete;
  BitMaskDesc& operator=(const BitMaskDesc&) = delete;
};

// DSAGenBitMask on the secondary stream, then the original stream waits for
// it. Returns the kernel's device time.
runtime::SimTimeNs chargeMaskGeneration(int device, int64_t elements, const L2Buffer& bitMask) {
  runtime::DeviceTimeline& timeline = runtime::Runtime::instance().timeline(device);
  const runtime::StreamId original = currentStream(device);
  const runtime::StreamId secondary =
      timeline.makeStreamId(runtime::DeviceTimeline::StreamType::kSecondary, 0);
  if (replayingGraph()) {
    thread_local uint64_t joinedReplay = 0;
    if (joinedReplay != graphReplayNumber()) {
      joinedReplay = graphReplayNumber();
      runtime::Event begin;
      timeline.recordEvent(begin, original, false);
      timeline.streamWaitEvent(secondary, begin);
    }
  }
  const perf::FusedKernelCost cost = perf::priceDropoutMaskGeneration(chipRates(), elements);
  runtime::SimTimeNs deviceNs = 0;
  {
    const ScopedStream onSecondary(device, secondary);
    const ScopedKernelName name(kMaskGenerationKernel);
    deviceNs = chargeModelledKernel(device, perf::OperatorKind::kRandom,
                                    static_cast<runtime::SimTimeNs>(cost.seconds * 1e9 + 0.5), cost.unit, 0,
                                    cost.bytes);
  }
  touchL2(device, {bitMask}, cost.bytes);  // the mask is now the newest data in the L2
  runtime::Event generated;
  timeline.recordEvent(generated, secondary, false);
  timeline.streamWaitEvent(original, generated);
  return deviceNs;
}

// The bit mask in the L2 model: it lives with the mask tensor PyTorch holds
// (autograd saves that one for the backward), at the bit mask's size.
L2Buffer bitMaskBuffer(const at::Tensor& mask) {
  L2Buffer buffer = l2BufferOf(*mask.unsafeGetTensorImpl());
  buffer.bytes = double(perf::dropoutBitMaskBytes(mask.numel()));
  return buffer;
}

// DropOutDoMask: reads `input` and the bit mask of `mask`, writes `output`.
runtime::SimTimeNs chargeApplyMask(int device, const at::Tensor& input, const at::Tensor& mask,
                                   const at::Tensor& output) {
  const BitMaskDesc bits(input.numel());
  const L2Buffer read[2] = {l2BufferOf(*input.unsafeGetTensorImpl()), bitMaskBuffer(mask)};
  bool resident[2] = {false, false};
  queryL2Residency(device, read, resident);
  perf::TensorDesc inputs[2] = {describeTensor(input), bits.desc};
  inputs[0].l2Resident = resident[0];
  inputs[1].l2Resident = resident[1];
  const perf::TensorDesc result = describeTensor(output);
  double traffic = 0;
  runtime::SimTimeNs deviceNs = 0;
  {
    const ScopedKernelName name(kApplyMaskKernel);
    deviceNs = chargeOperator(device, perf::OperatorKind::kElementwise, inputs, 2, &result, 1,
                              runtime::Placement::kAiCore, false, nullptr, 0, &traffic);
  }
  touchL2(device, {read[0], read[1], l2BufferOf(*output.unsafeGetTensorImpl())}, traffic);
  return deviceNs;
}

// A fill of `tensor` (torch_npu's ones / zeros for the edge probabilities).
runtime::SimTimeNs chargeFill(int device, const at::Tensor& tensor) {
  const perf::TensorDesc desc = describeTensor(tensor);
  return chargeOperator(device, perf::OperatorKind::kFactory, nullptr, 0, &desc, 1, runtime::Placement::kAiCore,
                        false);
}

std::tuple<at::Tensor, at::Tensor> nativeDropout(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input, input.options())};
  if (train.has_value() && !*train) {
    // torch_npu's eval path as well: a copy and a filled mask, both npu operators.
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  static OperatorRecord& record = nativeOperatorRecord("aten::native_dropout");
  const int device = input.device().index();
  const double keep = 1. - p;
  // A probability of zero keeps nothing: no division by zero, no NaN.
  const double scale = keep == 0 ? 0. : 1. / keep;
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  at::Tensor output = at::empty_like(input);
  if (!estimateOnly()) {
    at::Tensor maskOperand = kernelOperand(mask);
    at::Tensor outputOperand = kernelOperand(output);
    maskOperand.bernoulli_(keep, cpuGeneratorFor(std::nullopt, input.device().index()));
    at::mul_out(outputOperand, kernelOperand(input), maskOperand).mul_(scale);
  }
  runtime::SimTimeNs deviceNs = 0;
  if (p == 0) {
    deviceNs = chargeDeviceCopy(device, input, output) + chargeFill(device, mask);
  } else if (p == 1) {
    deviceNs = chargeFill(device, output) + chargeFill(device, mask);
  } else {
    deviceNs = chargeMaskGeneration(device, input.numel(), bitMaskBuffer(mask)) +
               chargeApplyMask(device, input, mask, output);
  }
  countNativeCall(record, deviceNs);
  return {output, mask};
}

at::Tensor nativeDropoutBackward(const at::Tensor& gradOutput, const at::Tensor& mask, double scale) {
  static OperatorRecord& record = nativeOperatorRecord("aten::native_dropout_backward");
  at::Tensor result = at::empty_like(gradOutput);
  if (!estimateOnly()) {
    // PyTorch's own kernel (its checks, its arithmetic) on the aliases.
    at::Tensor computed = at::native_dropout_backward(kernelOperand(gradOutput), kernelOperand(mask), scale);
    kernelOperand(result).copy_(computed);
  }
  if (gradOutput.numel() == 0) return result;
  const int device = gradOutput.device().index();
  // torch_npu: scale 1 (p = 0) is a copy, scale 0 (p = 1) a zero fill, any other one DropOutDoMask.
  const runtime::SimTimeNs deviceNs = scale == 1.   ? chargeDeviceCopy(device, gradOutput, result)
                                      : scale == 0. ? chargeFill(device, result)
                                                    : chargeApplyMask(device, gradOutput, mask, result);
  countNativeCall(record, deviceNs);
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", &nativeDropout);
  m.impl("native_dropout_backward", &nativeDropoutBackward);
}

}  // namespace npusim::backend
