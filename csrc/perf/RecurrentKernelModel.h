// Prices torch_npu's recurrent layer kernels: npu_lstm and npu_gru (CANN's
// DynamicRNN and DynamicGRUV2) and their gradients, one kernel per layer and
// direction for a whole sequence, as torch_npu runs nn.LSTM and nn.GRU.
//
// A recurrent kernel cannot spread its time steps over the chip: step t needs
// the hidden state of step t-1. Each step is a small fused step: the gate GEMM
// of [x_t, h_{t-1}] with the stacked weights on the Cube, then the gate
// arithmetic on the Vector unit, which the next step's GEMM waits for. The
// kernel's time is its one setup plus the steps one after another, or its
// compulsory HBM traffic (inputs, weights and outputs read or written once)
// if that takes longer. The gradient kernel's step has two GEMMs: the
// gradient of [x_t, h_{t-1}] and the accumulation of the weight gradient.
#pragma once

#include <cstdint>

#include "perf/ChipRates.h"
#include "perf/FusedKernelModel.h"
#include "perf/Types.h"

namespace npusim::perf {

struct RecurrentKernelWork {
  int64_t steps = 0;
  int64_t batch = 0;
  int64_t inputSize = 0;   // features of x_t
  int64_t hiddenSize = 0;  // features of h_t (an LSTM's projection size when it has one)
  int64_t gateRows = 0;    // rows of the stacked gate weights: 4 x hidden (LSTM), 3 x hidden (GRU)
  bool hasBiases = true;
  bool backward = false;
  DType dtype = DType::kFloat32;
};

FusedKernelCost priceRecurrentKernel(const ChipRates& rates, const RecurrentKernelWork& work) noexcept;

}  // namespace npusim::perf
