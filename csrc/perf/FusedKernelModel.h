// Prices torch_npu's own fused operators (npu_rms_norm, npu_swiglu,
// npu_grouped_matmul, npu_apply_adam_w, ...) as the single kernels they are
// on the chip: one launch whose time is the largest of its Cube work (the
// GEMMs it contains), its Vector work (element operations) and its HBM
// traffic (each operand read once, each result written once), plus the
// kernel's fixed overhead. The unfused equivalent pays a launch and a round
// trip through HBM per step; that difference is what these kernels buy.
#pragma once

#include <array>

#include "perf/ChipRates.h"
#include "perf/GemmModel.h"
#include "perf/Types.h"

namespace npusim::perf {

struct FusedKernelWork {
  // The matrix products of the kernel (grouped matmul: one per group).
  static constexpr int kMaxGemms = 8;
  std::array<GemmShape, kMaxGemms> gemms{};
  int gemmCount = 0;
  CubePrecision precision = CubePrecision::kHalf;
  int operandBytes = 2;
  // Share of the products' blocks computed (masked attention skips blocks).
  double cubeFraction = 1.0;
  // Element work of the Vector unit.
  double vectorElements = 0;
  double opsPerElement = 1;
  DType computeType = DType::kFloat32;
  // Compulsory HBM traffic: operands read once, results written once.
  double hbmBytes = 0;
  // A kernel parallel over independent blocks of equal work, one block per AI
  // Cube core (with its AI Vector cores) at a time, as FlashAttention over
  // batch x heads x query blocks; 0 when the work spreads over the whole chip.
  double parallelBlocks = 0;

  void addGemm(const GemmShape& shape) noexcept {
    if (gemmCount < kMaxGemms) {
      gemms[gemmCount++] = shape;
    } else {
      // More groups than slots: fold into the last slot (same FLOPs).
      gemms[kMaxGemms - 1].m += shape.m;
    }
  }
};

struct FusedKernelCost {
  double seconds = 0;
  double cubeSeconds = 0;
  double vectorSeconds = 0;
  double memorySeconds = 0;
  double flops = 0;  // useful Cube FLOPs (2*m*n*k summed)
  double bytes = 0;
  Unit unit = Unit::kVector;  // the bound unit
};

FusedKernelCost priceFusedKernel(const ChipRates& rates, const FusedKernelWork& work) noexcept;

// Whether the precision of a floating dtype on the Cube is known; false for
// integer and exotic types (then the kernel is priced on its Vector work).
bool fusedCubePrecision(DType type, CubePrecision& precision, int& operandBytes) noexcept;

}  // namespace npusim::perf
