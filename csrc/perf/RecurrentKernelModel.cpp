#include "perf/RecurrentKernelModel.h"

#include <algorithm>

#include "perf/Calibration.h"

namespace npusim::perf {

namespace cal = calibration;

FusedKernelCost priceRecurrentKernel(const ChipRates& rates, const RecurrentKernelWork& work) noexcept {
  FusedKernelCost cost;
  if (work.steps <= 0 || work.batch <= 0 || work.gateRows <= 0) return cost;
  const int64_t stateWidth = work.inputSize + work.hiddenSize;  // [x_t, h_{t-1}]
  FusedKernelWork step;
  if (!fusedCubePrecision(work.dtype, step.precision, step.operandBytes)) {
    step.precision = CubePrecision::kFloat32;
    step.operandBytes = 4;
  }
  if (work.backward) {
    step.addGemm(GemmShape{1, work.batch, stateWidth, work.gateRows});  // d[x_t, h] = dgates . W
    step.addGemm(GemmShape{1, stateWidth, work.gateRows, work.batch});  // dW += [x_t, h]^T . dgates
  } else {
    step.addGemm(GemmShape{1, work.batch, work.gateRows, stateWidth});  // gates = [x_t, h] . W^T
  }
  // Gate activations and the state update: sigmoids, tanhs, products and sums
  // over the gates of the step (their derivatives in the gradient).
  step.vectorElements = double(work.batch) * double(work.gateRows);
  step.opsPerElement = work.backward ? 6 : 4;
  step.computeType = work.dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  const FusedKernelCost one = priceFusedKernel(rates, step);
  const double stepSeconds = one.cubeSeconds + one.vectorSeconds;  // the Vector waits for the GEMM

  const double element = elementSize(work.dtype);
  const double steps = double(work.steps), batch = double(work.batch);
  const double sequenceIn = steps * batch * double(work.inputSize);
  const double sequenceOut = steps * batch * double(work.hiddenSize);
  const double gates = steps * batch * double(work.gateRows);  // kept for the gradient
  const double weights = double(work.gateRows) * double(stateWidth) + (work.hasBiases ? 2.0 * double(work.gateRows) : 0);
  const double states = 2.0 * batch * double(work.hiddenSize);
  const double elements = work.backward
                              ? sequenceOut + sequenceIn + weights + gates + sequenceOut + states  // read
                                    + sequenceIn + weights + states                                // write
                              : sequenceIn + weights + states + sequenceOut + gates + states;
  cost.bytes = elements * element;
  cost.memorySeconds = rates.hbmBytesPerSecond > 0 ? cost.bytes / rates.hbmBytesPerSecond : 0;
  cost.cubeSeconds = steps * one.cubeSeconds;
  cost.vectorSeconds = steps * one.vectorSeconds;
  cost.flops = steps * one.flops;
  cost.seconds = cal::kCubeKernelOverheadNs * 1e-9 + std::max(steps * stepSeconds, cost.memorySeconds);
  cost.unit = cost.cubeSeconds >= cost.vectorSeconds ? Unit::kCube : Unit::kVector;
  return cost;
}

}  // namespace npusim::perf
