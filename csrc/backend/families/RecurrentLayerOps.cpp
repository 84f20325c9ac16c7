// Whole recurrent layers: nn.LSTM and nn.GRU as torch_npu runs them. torch_npu overrides
// aten::lstm.input and aten::gru.input for npu (its AutogradPrivateUse1 kernels) and launches one
// fused kernel per layer and direction for the whole sequence, npu_lstm / npu_gru (CANN's
// DynamicRNN / DynamicGRUV2), with one gradient kernel each (npu_lstm_backward, npu_gru_backward).
// Without the override ATen's composite would run each time step as separate kernels (two matrix
// products and a fused cell per step).
//
// The numbers are the CPU's own: the layers run as PyTorch's CPU implementation of
// aten::lstm / aten::gru (oneDNN's fused RNN where PyTorch uses it) on CPU aliases of the device
// memory, recording their CPU autograd graph when gradients are needed; the backward asks that
// graph for the gradients (torch::autograd::grad). Results therefore equal a CPU run bit for bit,
// and the host does no more work than the CPU's own path. The timeline gets the kernels the real
// stack launches, priced by perf/RecurrentKernelModel.h, counted as npu::npu_lstm (...).
//
// Calls the fused layers do not take run ATen's composite (one kernel per step, as before):
// estimate-only mode, autocast (the composite is what autocast casts), dropout between layers in
// training (the CPU path would draw from the CPU generator instead of the npu one), arguments
// that are not all dense tensors on one npu device, tensor subclasses and Python dispatch modes
// (Dynamo's fake tensors trace the composite).
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/gru.h>
#include <ATen/ops/gru_native.h>
#include <ATen/ops/lstm.h>
#include <ATen/ops/lstm_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/executor/KernelOperands.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "perf/RecurrentKernelModel.h"

namespace npusim::backend {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

enum class CellType : int64_t { kLstm = 0, kGru = 1 };

// The arguments of aten::lstm.input / aten::gru.input other than the tensors.
struct LayerOptions {
  CellType cell;
  bool hasBiases;
  int64_t numLayers;
  double dropout;
  bool train;
  bool bidirectional;
  bool batchFirst;
  size_t hiddenStates;  // tensors in hx: 2 (h, c) for an LSTM, 1 for a GRU
};

// A plain dense npu tensor: not a tensor subclass (a FakeTensor while Dynamo traces, a
// FunctionalTensor), whose data the CPU's RNN could not run on.
bool onOneNpu(const at::Tensor& t, const c10::Device& device) {
  return t.defined() && t.device() == device && t.layout() == c10::kStrided &&
         !t.key_set().has(c10::DispatchKey::Python);
}

bool runsAsFusedLayers(const at::Tensor& input, at::TensorList hx, at::TensorList params, const LayerOptions& options) {
  if (estimateOnly() || at::autocast::is_autocast_enabled(c10::DeviceType::PrivateUse1)) return false;
  // Under a Python dispatch mode (FakeTensorMode, FunctionalTensorMode) the composite's
  // operators are what the mode must see.
  if (c10::impl::dispatch_mode_enabled()) return false;
  if (options.dropout > 0 && options.train && options.numLayers > 1) return false;
  if (input.device().type() != c10::DeviceType::PrivateUse1) return false;
  for (const at::TensorList list : {hx, params}) {
    for (const at::Tensor& t : list) {
      if (!onOneNpu(t, input.device())) return false;
    }
  }
  return onOneNpu(input, input.device()) && hx.size() == options.hiddenStates;
}

// The kernels of one call: one per layer and direction, priced from the
// weights' shapes (w_ih [gates, input], w_hh [gates, hidden], ...).
void chargeLayerKernels(int device, const LayerOptions& options, const at::Tensor& input, at::TensorList params,
                        bool backward) {
  static OperatorRecord& lstm = kernelRecord("npu::npu_lstm");
  static OperatorRecord& lstmBackward = kernelRecord("npu::npu_lstm_backward");
  static OperatorRecord& gru = kernelRecord("npu::npu_gru");
  static OperatorRecord& gruBackward = kernelRecord("npu::npu_gru_backward");
  OperatorRecord& record = options.cell == CellType::kLstm ? (backward ? lstmBackward : lstm)
                                                           : (backward ? gruBackward : gru);
  const int64_t directions = options.bidirectional ? 2 : 1;
  const size_t perLayer = params.size() / static_cast<size_t>(options.numLayers * directions);
  const int64_t steps = input.size(options.batchFirst ? 1 : 0);
  const int64_t batch = input.dim() == 3 ? input.size(options.batchFirst ? 0 : 1) : 1;
  for (size_t first = 0; first + perLayer <= params.size(); first += perLayer) {
    const at::Tensor& weightIh = params[first];
    const at::Tensor& weightHh = params[first + 1];
    perf::RecurrentKernelWork work;
    work.steps = steps;
    work.batch = batch;
    work.inputSize = weightIh.size(1);
    work.hiddenSize = weightHh.size(1);
    work.gateRows = weightIh.size(0);
    work.hasBiases = options.hasBiases;
    work.backward = backward;
    work.dtype = perfDtype(input.scalar_type());
    const perf::FusedKernelCost cost = perf::priceRecurrentKernel(chipRates(), work);
    const auto deviceNs = static_cast<runtime::SimTimeNs>(cost.seconds * 1e9 + 0.5);
    countNativeCall(record, chargeModelledKernel(device, perf::OperatorKind::kOther, deviceNs, cost.unit, cost.flops,
                                                 cost.bytes));
  }
}

// One call of the layers, differentiable on npu: forward and backward run the CPU's autograd
// graph of aten::lstm / aten::gru over CPU aliases. `operands`: input, the hidden states, the
// parameters (the layout of aten::lstm.input's arguments).
struct FusedRecurrentLayers : public torch::autograd::Function<FusedRecurrentLayers> {
  static variable_list forward(AutogradContext* ctx, at::TensorList operands, LayerOptions options,
                               bool recordGraph) {
    const at::Tensor& input = operands[0];
    const int device = input.device().index();
    const c10::DeviceGuard guard(input.device());
    std::vector<at::Tensor> leaves;
    leaves.reserve(operands.size());
    for (const at::Tensor& t : operands) {
      at::Tensor alias = kernelOperand(t);
      if (recordGraph && t.requires_grad()) alias.requires_grad_(true);
      leaves.push_back(std::move(alias));
    }
    const at::TensorList hx(leaves.data() + 1, options.hiddenStates);
    const at::TensorList params(leaves.data() + 1 + options.hiddenStates, leaves.size() - 1 - options.hiddenStates);
    std::vector<at::Tensor> results;
    {
      const ScopedOutputDevice outputs(device);
      const at::AutoGradMode gradMode(recordGraph);
      if (options.cell == CellType::kLstm) {
        auto [output, hy, cy] = at::lstm(leaves[0], hx, params, options.hasBiases, options.numLayers, options.dropout,
                                         options.train, options.bidirectional, options.batchFirst);
        results = {std::move(output), std::move(hy), std::move(cy)};
      } else {
        auto [output, hy] = at::gru(leaves[0], hx[0], params, options.hasBiases, options.numLayers, options.dropout,
                                    options.train, options.bidirectional, options.batchFirst);
        results = {std::move(output), std::move(hy)};
      }
    }
    chargeLayerKernels(device, options, input, operands.slice(1 + options.hiddenStates), false);
    variable_list npu;
    for (const at::Tensor& result : results) npu.push_back(npuResult(result.detach(), device));
    // Saved on npu too: autograd then refuses a backward after an in-place change of an
    // argument or a result, as it does for the real kernels' saved tensors.
    std::vector<at::Tensor> saved(operands.begin(), operands.end());
    saved.insert(saved.end(), npu.begin(), npu.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["leaves"] = c10::List<at::Tensor>(leaves);
    ctx->saved_data["results"] = c10::List<at::Tensor>(results);
    ctx->saved_data["options"] = std::vector<int64_t>{static_cast<int64_t>(options.cell), options.hasBiases,
                                                      options.numLayers, options.train, options.bidirectional,
                                                      options.batchFirst};
    ctx->saved_data["dropout"] = options.dropout;
    return npu;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TORCH_CHECK(!at::GradMode::is_enabled(),
                "npusim: the gradient kernels of nn.LSTM and nn.GRU on npu (npu_lstm_backward, npu_gru_backward) "
                "are not differentiable; double backward (create_graph=True) through them is not supported");
    const variable_list saved = ctx->get_saved_variables();
    const std::vector<at::Tensor> leaves = ctx->saved_data["leaves"].toTensorVector();
    const std::vector<at::Tensor> results = ctx->saved_data["results"].toTensorVector();
    const std::vector<int64_t> packed = ctx->saved_data["options"].toIntVector();
    const LayerOptions options{static_cast<CellType>(packed[0]), packed[1] != 0, packed[2],
                               ctx->saved_data["dropout"].toDouble(), packed[3] != 0, packed[4] != 0, packed[5] != 0,
                               static_cast<CellType>(packed[0]) == CellType::kLstm ? size_t{2} : size_t{1}};
    const at::Tensor& input = saved[0];
    const int device = input.device().index();
    const c10::DeviceGuard guard(input.device());

    std::vector<at::Tensor> outputs, gradOutputs, wanted;
    std::vector<size_t> wantedIndex;
    for (size_t i = 0; i < results.size() && i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      outputs.push_back(results[i]);
      gradOutputs.push_back(kernelOperand(grads[i]));
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (leaves[i].requires_grad()) {
        wanted.push_back(leaves[i]);
        wantedIndex.push_back(i);
      }
    }
    // One gradient per input of forward: the operands, then none for `options` and `recordGraph`.
    variable_list gradients(leaves.size() + 2);
    if (outputs.empty() || wanted.empty()) return gradients;
    variable_list cpuGradients;
    {
      const ScopedOutputDevice outputsOnDevice(device);
      // retain_graph: autograd may run this node again (backward(retain_graph=True)).
      cpuGradients = torch::autograd::grad(outputs, wanted, gradOutputs, /*retain_graph=*/true,
                                           /*create_graph=*/false, /*allow_unused=*/true);
    }
    const at::TensorList params =
        at::TensorList(saved).slice(1 + options.hiddenStates, leaves.size() - 1 - options.hiddenStates);
    chargeLayerKernels(device, options, input, params, true);
    for (size_t k = 0; k < wanted.size(); ++k) {
      gradients[wantedIndex[k]] = npuResultOrUndefined(cpuGradients[k], device);
    }
    return gradients;
  }
};

bool recordsGraph(at::TensorList hx, at::TensorList params, const at::Tensor& input) {
  if (!at::GradMode::is_enabled()) return false;
  if (input.requires_grad()) return true;
  for (const at::TensorList list : {hx, params}) {
    for (const at::Tensor& t : list) {
      if (t.requires_grad()) return true;
    }
  }
  return false;
}

std::vector<at::Tensor> operandsOf(const at::Tensor& input, at::TensorList hx, at::TensorList params) {
  std::vector<at::Tensor> operands;
  operands.reserve(1 + hx.size() + params.size());
  operands.push_back(input);
  operands.insert(operands.end(), hx.begin(), hx.end());
  operands.insert(operands.end(), params.begin(), params.end());
  return operands;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstmLayers(const at::Tensor& input, at::TensorList hx,
                                                          at::TensorList params, bool hasBiases, int64_t numLayers,
                                                          double dropout, bool train, bool bidirectional,
                                                          bool batchFirst) {
  const LayerOptions options{CellType::kLstm, hasBiases, numLayers, dropout, train, bidirectional, batchFirst, 2};
  if (!runsAsFusedLayers(input, hx, params, options)) {
    return at::native::lstm(input, hx, params, hasBiases, numLayers, dropout, train, bidirectional, batchFirst);
  }
  const variable_list out = FusedRecurrentLayers::apply(at::TensorList(operandsOf(input, hx, params)), options,
                                                        recordsGraph(hx, params, input));
  return {out[0], out[1], out[2]};
}

std::tuple<at::Tensor, at::Tensor> gruLayers(const at::Tensor& input, const at::Tensor& hx, at::TensorList params,
                                             bool hasBiases, int64_t numLayers, double dropout, bool train,
                                             bool bidirectional, bool batchFirst) {
  const LayerOptions options{CellType::kGru, hasBiases, numLayers, dropout, train, bidirectional, batchFirst, 1};
  const at::TensorList hidden(&hx, 1);
  if (!runsAsFusedLayers(input, hidden, params, options)) {
    return at::native::gru(input, hx, params, hasBiases, numLayers, dropout, train, bidirectional, batchFirst);
  }
  const variable_list out = FusedRecurrentLayers::apply(at::TensorList(operandsOf(input, hidden, params)), options,
                                                        recordsGraph(hidden, params, input));
  return {out[0], out[1]};
}

}  // namespace

// Above autograd (the layers' own backward) and below it (inference mode, where autograd's keys
// are skipped and ATen's composite would otherwise run).
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(lstmLayers));
  m.impl("gru.input", TORCH_FN(gruLayers));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(lstmLayers));
  m.impl("gru.input", TORCH_FN(gruLayers));
}

}  // namespace npusim::backend
