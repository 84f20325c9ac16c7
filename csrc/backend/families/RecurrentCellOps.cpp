// Fused LSTM and GRU cells. For accelerator tensors ATen's RNN code calls the fused cell kernels
// (_thnn_fused_lstm_cell, _thnn_fused_gru_cell and their backward) that only CUDA provides, so
// nn.LSTM, nn.GRU, LSTMCell and GRUCell would fail on npu. torch_npu has its own kernels; npusim
// computes the same gate arithmetic with ATen's CPU operators on the device memory (results agree
// with the CPU's unfused cells to rounding: the order of the gate additions differs).
//
// Workspace layouts (private to these kernels, passed from forward to backward by autograd):
// LSTM: the activated gates [i, f, g, o]; GRU: [r, z, n, hx, hn] as CUDA's kernels keep them.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/executor/KernelOperands.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"

namespace npusim::backend {
namespace {

// Runs `compute` on host operands with its allocations in device memory, charges it as the
// one fused AI Core kernel torch_npu runs (reading `operands`, writing the results), counts
// the call under `record` for the reports, and returns the results as npu tensors.
template <size_t N, typename Compute>
std::array<at::Tensor, N> onDevice(OperatorRecord& record, std::initializer_list<at::Tensor> operands,
                                   Compute compute) {
  const at::Tensor& anchor = *operands.begin();
  const int device = anchor.device().index();
  const c10::DeviceGuard guard(anchor.device());
  std::array<at::Tensor, N> results;
  {
    const ScopedOutputDevice outputs(device);
    results = compute();
  }
  c10::SmallVector<perf::TensorDesc, 8> inputs, produced;
  for (const at::Tensor& operand : operands) {
    if (operand.defined()) inputs.push_back(describeTensor(operand));
  }
  for (auto& result : results) {
    if (!result.defined()) continue;
    result = npuResult(result, device);
    produced.push_back(describeTensor(result));
  }
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kActivation, inputs.data(),
                                         static_cast<int>(inputs.size()), produced.data(),
                                         static_cast<int>(produced.size()), runtime::Placement::kAiCore, false));
  return results;
}

at::Tensor orUndefined(const std::optional<at::Tensor>& t) { return t.has_value() ? *t : at::Tensor(); }

at::Tensor withBiases(at::Tensor gates, const std::optional<at::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + kernelOperand(*bias) : gates;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fusedLstmCell(const at::Tensor& inputGates,
                                                             const at::Tensor& hiddenGates, const at::Tensor& cx,
                                                             const std::optional<at::Tensor>& inputBias,
                                                             const std::optional<at::Tensor>& hiddenBias) {
  static OperatorRecord& record = nativeOperatorRecord("aten::_thnn_fused_lstm_cell");
  auto results = onDevice<3>(record, {inputGates, hiddenGates, cx, orUndefined(inputBias), orUndefined(hiddenBias)},
                             [&]() -> std::array<at::Tensor, 3> {
    at::Tensor gates = withBiases(withBiases(kernelOperand(inputGates) + kernelOperand(hiddenGates), inputBias),
                                  hiddenBias);
    auto chunks = gates.chunk(4, 1);
    const at::Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(), o = chunks[3].sigmoid();
    const at::Tensor cy = f * kernelOperand(cx) + i * g;
    const at::Tensor hy = o * cy.tanh();
    return {hy, cy, at::cat({i, f, g, o}, 1)};
  });
  return {results[0], results[1], results[2]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fusedLstmCellBackward(const std::optional<at::Tensor>& gradHy,
                                                                     const std::optional<at::Tensor>& gradCy,
                                                                     const at::Tensor& cx, const at::Tensor& cy,
                                                                     const at::Tensor& workspace, bool hasBias) {
  static OperatorRecord& record = nativeOperatorRecord("aten::_thnn_fused_lstm_cell_backward_impl");
  auto results = onDevice<3>(record, {workspace, orUndefined(gradHy), orUndefined(gradCy), cx, cy},
                             [&]() -> std::array<at::Tensor, 3> {
    auto gates = kernelOperand(workspace).chunk(4, 1);
    const at::Tensor &i = gates[0], &f = gates[1], &g = gates[2], &o = gates[3];
    const at::Tensor c = kernelOperand(cy);
    const at::Tensor tanhCy = c.tanh();
    const bool haveHy = gradHy.has_value() && gradHy->defined();
    const bool haveCy = gradCy.has_value() && gradCy->defined();
    const at::Tensor dHy = haveHy ? kernelOperand(*gradHy) : at::zeros_like(c);
    at::Tensor dCy = haveCy ? kernelOperand(*gradCy) : at::zeros_like(c);
    dCy = dCy + dHy * o * (1 - tanhCy * tanhCy);
    const at::Tensor dI = dCy * g * i * (1 - i);
    const at::Tensor dF = dCy * kernelOperand(cx) * f * (1 - f);
    const at::Tensor dG = dCy * i * (1 - g * g);
    const at::Tensor dO = dHy * tanhCy * o * (1 - o);
    const at::Tensor gradGates = at::cat({dI, dF, dG, dO}, 1);
    return {gradGates, dCy * f, hasBias ? gradGates.sum(0) : at::Tensor()};
  });
  return {results[0], results[1], results[2]};
}

std::tuple<at::Tensor, at::Tensor> fusedGruCell(const at::Tensor& inputGates, const at::Tensor& hiddenGates,
                                                const at::Tensor& hx, const std::optional<at::Tensor>& inputBias,
                                                const std::optional<at::Tensor>& hiddenBias) {
  static OperatorRecord& record = nativeOperatorRecord("aten::_thnn_fused_gru_cell");
  auto results = onDevice<2>(record, {inputGates, hiddenGates, hx, orUndefined(inputBias), orUndefined(hiddenBias)},
                             [&]() -> std::array<at::Tensor, 2> {
    auto in = withBiases(kernelOperand(inputGates), inputBias).chunk(3, 1);
    auto hidden = withBiases(kernelOperand(hiddenGates), hiddenBias).chunk(3, 1);
    const at::Tensor h = kernelOperand(hx);
    const at::Tensor r = (in[0] + hidden[0]).sigmoid();
    const at::Tensor z = (in[1] + hidden[1]).sigmoid();
    const at::Tensor n = (in[2] + r * hidden[2]).tanh();
    const at::Tensor hy = n + z * (h - n);
    return {hy, at::cat({r, z, n, h, hidden[2]}, 1)};
  });
  return {results[0], results[1]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fusedGruCellBackward(
    const at::Tensor& gradHy, const at::Tensor& workspace, bool hasBias) {
  static OperatorRecord& record = nativeOperatorRecord("aten::_thnn_fused_gru_cell_backward");
  auto results = onDevice<5>(record, {workspace, gradHy}, [&]() -> std::array<at::Tensor, 5> {
    auto parts = kernelOperand(workspace).chunk(5, 1);
    const at::Tensor &r = parts[0], &z = parts[1], &n = parts[2], &h = parts[3], &hn = parts[4];
    const at::Tensor dHy = kernelOperand(gradHy);
    const at::Tensor dN = dHy * (1 - z) * (1 - n * n);
    const at::Tensor dZ = dHy * (h - n) * z * (1 - z);
    const at::Tensor dR = dN * hn * r * (1 - r);
    const at::Tensor gradInputGates = at::cat({dR, dZ, dN}, 1);
    const at::Tensor gradHiddenGates = at::cat({dR, dZ, dN * r}, 1);
    return {gradInputGates, gradHiddenGates, dHy * z, hasBias ? gradInputGates.sum(0) : at::Tensor(),
            hasBias ? gradHiddenGates.sum(0) : at::Tensor()};
  });
  return {results[0], results[1], results[2], results[3], results[4]};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fusedLstmCell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fusedLstmCellBackward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fusedGruCell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fusedGruCellBackward));
}

}  // namespace npusim::backend
