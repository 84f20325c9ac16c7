// Validation of npusim's performance model against published Ascend figures
// (shared/reference/ascend-hardware.md §3). Prints estimate vs reference,
// the error and PASS/FAIL against the targets of the performance-model issue:
// matmul throughput within +-10%, end-to-end training throughput within +-20%.
//
//   ./npusim_validate_perf_model            report; exit 0
//   ./npusim_validate_perf_model --strict   exit 1 if a target fails
//
// Each end-to-end reference is rebuilt as the list of operators one NPU runs
// in one training step, priced with CostModel::price exactly as the backend
// prices the operators of a real run, and summed (device time; the host is
// not the bottleneck at these batch sizes).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perf/CostModel.h"
#include "perf/GemmModel.h"
#include "perf/OwnedTensor.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using perf::DType;
using perf::OperatorKind;
using perf::TensorDesc;
using perf::Unit;

namespace {

// ---------------------------------------------------------------- helpers

using Tensor = perf::OwnedTensor;
using perf::absent;
using perf::tensor;

using perf::transposed;

struct Row {
  double seconds = 0;
  double flops = 0;
  double calls = 0;
  Unit unit = Unit::kNone;
};

// Sums the priced operators of one training step by category and by unit.
class Ledger {
 public:
  Ledger(const perf::CostModel& model, perf::CostOptions options) : model_(model), options_(options) {}

  // Prices one operator (count calls of it) and returns the seconds of one call.
  double op(const std::string& category, std::string_view atenName, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, const std::vector<int64_t>& intArgs = {}, double count = 1) {
    std::vector<TensorDesc> in, out;
    for (const auto& t : inputs) in.push_back(t.desc());
    for (const auto& t : outputs) out.push_back(t.desc());
    const OperatorKind kind = perf::classifyOperator(atenName);
    const perf::Cost cost = model_.price(kind, in.data(), int(in.size()), out.data(), int(out.size()),
                                         perf::Placement::kAiCore, options_, intArgs.data(), int(intArgs.size()));
    add(category, cost.unit, double(cost.deviceNs) * 1e-9 * count, kind == OperatorKind::kAttention ||
                                                                            kind == OperatorKind::kAttentionBackward ||
                                                                            perf::isCubeKind(kind)
                                                                        ? cost.flops * count
                                                                        : 0.0,
        count);
    return double(cost.deviceNs) * 1e-9;
  }

  void add(const std::string& category, Unit unit, double seconds, double flops = 0, double calls = 1) {
    Row& row = rows_[category];
    row.seconds += seconds;
    row.flops += flops;
    row.calls += calls;
    row.unit = unit;
    byUnit_[unit] += seconds;
    total_ += seconds;
    flops_ += flops;
  }

  double totalSeconds() const { return total_; }
  double totalFlops() const { return flops_; }
  double unitSeconds(Unit unit) const {
    auto it = byUnit_.find(unit);
    return it == byUnit_.end() ? 0 : it->second;
  }

  void print(const char* indent) const {
    std::vector<std::pair<std::string, Row>> sorted(rows_.begin(), rows_.end());
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second.seconds > b.second.seconds; });
    std::printf("%s%-34s %10s %7s %8s %10s\n", indent, "category", "ms", "share", "calls", "TFLOPS");
    for (const auto& [name, row] : sorted) {
      std::printf("%s%-34s %10.2f %6.1f%% %8.0f %10s\n", indent, name.c_str(), row.seconds * 1e3,
                  100.0 * row.seconds / total_, row.calls,
                  row.flops > 0 ? std::to_string(int(std::lround(row.flops / row.seconds / 1e12))).c_str() : "-");
    }
    std::printf("%sby unit:", indent);
    for (const auto& [unit, seconds] : byUnit_) {
      std::printf("  %s %.1f ms (%.0f%%)", std::string(perf::unitName(unit)).c_str(), seconds * 1e3,
                  100.0 * seconds / total_);
    }
    std::printf("\n");
  }

 private:
  const perf::CostModel& model_;
  perf::CostOptions options_;
  std::map<std::string, Row> rows_;
  std::map<Unit, double> byUnit_;
  double total_ = 0;
  double flops_ = 0;
};

struct Verdict {
  int checks = 0;
  int failures = 0;
};

double errorPercent(double estimate, double reference) { return 100.0 * (estimate - reference) / reference; }

void printCheck(Verdict& verdict, const char* what, double estimate, double reference, double tolerancePercent,
                const char* unit) {
  const double error = errorPercent(estimate, reference);
  const bool pass = std::fabs(error) <= tolerancePercent;
  ++verdict.checks;
  if (!pass) ++verdict.failures;
  std::printf("  %-46s %10.1f %10.1f %-9s %+7.1f%%  %s (target +-%.0f%%)\n", what, estimate, reference, unit, error,
              pass ? "PASS" : "FAIL", tolerancePercent);
}

void printInfo(const char* what, double estimate, double reference, const char* unit) {
  std::printf("  %-46s %10.1f %10.1f %-9s %+7.1f%%  info\n", what, estimate, reference, unit,
              errorPercent(estimate, reference));
}

// ------------------------------------------------------ 1. matmul sweep

double matmulTflops(const perf::CostModel& model, int64_t m, int64_t n, int64_t k, DType dtype,
                    bool allowHf32 = false) {
  const Tensor a = tensor({m, k}, dtype), b = tensor({k, n}, dtype), c = tensor({m, n}, dtype);
  const TensorDesc in[] = {a.desc(), b.desc()};
  const TensorDesc out[] = {c.desc()};
  perf::CostOptions options;
  options.allowHf32Matmul = allowHf32;
  const perf::Cost cost = model.price(OperatorKind::kMatmul, in, 2, out, 1, perf::Placement::kAiCore, options);
  return 2.0 * double(m) * double(n) * double(k) / (double(cost.deviceNs) * 1e-9) / 1e12;
}

void validateMatmul(const runtime::ChipSpec& chip, Verdict& verdict) {
  const perf::CostModel model(chip);
  std::printf("\n1. Matmul throughput on %s (peak fp16 %.1f TFLOPS)\n", chip.socName.c_str(),
              model.peakFlops(perf::CubePrecision::kHalf) / 1e12);
  std::printf("   Reference (§3.3): zzc0721/torch-performance-test-data #109, 910B2, torch 2.5.1, square mm,\n"
              "   device throughput; limulidae (CANN 8.0.0.beta1, torch_npu 2.4.0.post2): best BF16 328, FP32 87.\n");
  std::printf("  %-46s %10s %10s %-9s %8s\n", "case", "estimate", "reference", "unit", "error");
  struct Point {
    int64_t n;
    DType dtype;
    double reference;
    const char* label;
    bool target;
  };
  const Point points[] = {
      {1024, DType::kFloat16, 98.0, "fp16 1024^3", false},    {2048, DType::kFloat16, 251.0, "fp16 2048^3", false},
      {4096, DType::kFloat16, 314.5, "fp16 4096^3", true},    {8192, DType::kFloat16, 305.0, "fp16 8192^3", true},
      {10240, DType::kFloat16, 275.0, "fp16 10240^3", true},  {4096, DType::kBFloat16, 315.4, "bf16 4096^3", true},
      {4096, DType::kFloat32, 84.5, "fp32 4096^3", true},
  };
  double bestHalf = 0;
  for (const Point& p : points) {
    const double tflops = matmulTflops(model, p.n, p.n, p.n, p.dtype);
    if (p.dtype != DType::kFloat32) bestHalf = std::max(bestHalf, tflops);
    if (p.target) {
      printCheck(verdict, p.label, tflops, p.reference, 10, "TFLOPS");
    } else {
      printInfo(p.label, tflops, p.reference, "TFLOPS");
    }
  }
  printCheck(verdict, "best fp16/bf16 (limulidae 328)", bestHalf, 328.0, 10, "TFLOPS");
  printCheck(verdict, "fp32 4096^3 (limulidae best 87)", matmulTflops(model, 4096, 4096, 4096, DType::kFloat32), 87.0,
             10, "TFLOPS");
  std::printf("  %-46s %10.1f %10s %-9s\n", "hf32 4096^3 (allow_hf32; no reference)",
              matmulTflops(model, 4096, 4096, 4096, DType::kFloat32, true), "-", "TFLOPS");
  std::printf("  %-46s %10.1f %10s %-9s\n", "fp16 4095^3 (unaligned: TransData pads)",
              matmulTflops(model, 4095, 4095, 4095, DType::kFloat16), "-", "TFLOPS");
  const perf::GemmEstimate g = perf::estimateGemm(
      model.rates(), perf::GemmShape{1, 4096, 4096, 4096},
      perf::GemmTraffic{4096.0 * 4096 * 2, 4096.0 * 4096 * 2, 4096.0 * 4096 * 2, 0}, perf::GemmOptions{});
  std::printf("   Model: %lld tiles of %lldx%lld in %lld waves on %d cube cores; 1024^3 takes %.1f us on the device,\n"
              "   about one eager dispatch (%.0f us/op at TASK_QUEUE_ENABLE=1): smaller matmuls are host-bound.\n",
              (long long)g.tiles, (long long)g.tileM, (long long)g.tileN, (long long)g.waves, model.rates().cubeCores,
              1e-3 * 2.0 * 1024 * 1024 * 1024 / (matmulTflops(model, 1024, 1024, 1024, DType::kFloat16) * 1e12) * 1e9,
              double(model.hostDispatchNs(1)) * 1e-3);
  std::printf("   Agreement: by construction; the sweep is the calibration set (Calibration.h: MMAD issue cycles,\n"
              "   fixed Cube kernel overhead, L2 re-read fraction). fp32 follows from cube_fp32_rate with no extra\n"
              "   fit; HF32 has no public figure (taken as half the fp16 rate).\n");
}

// ---------------------------------------------------------- 2. ResNet-50

struct ConvSpec {
  int64_t inC, outC, kernel, stride, padding, inHW;
  int64_t outHW() const { return (inHW + 2 * padding - kernel) / stride + 1; }
};

class ResNetStep {
 public:
  ResNetStep(Ledger& ledger, int64_t batch) : ledger_(ledger), n_(batch) {}

  void conv(const ConvSpec& c, bool needInputGrad) {
    const int64_t o = c.outHW();
    const Tensor x = tensor({n_, c.inC, c.inHW, c.inHW}, DType::kFloat16);
    const Tensor w = tensor({c.outC, c.inC, c.kernel, c.kernel}, DType::kFloat16);
    const Tensor y = tensor({n_, c.outC, o, o}, DType::kFloat16);
    ledger_.op("conv forward", "aten::convolution_overrideable", {x, w}, {y}, {0, 1});
    backward_.push_back([=, this] {
      // output_mask: grad_input unless this is the first layer, grad_weight, no bias.
      const int64_t mask = (needInputGrad ? 1 : 0) | 2;
      ledger_.op("conv backward (dgrad+wgrad)", "aten::convolution_backward_overrideable", {y, x, w},
                 {needInputGrad ? x : absent(), w, absent()}, {0, 1, mask});
    });
    params_ += double(c.outC * c.inC * c.kernel * c.kernel);
  }

  void batchNorm(int64_t channels, int64_t hw) {
    const Tensor x = tensor({n_, channels, hw, hw}, DType::kFloat16);
    const Tensor p = tensor({channels}, DType::kFloat32);
    ledger_.op("batch norm forward", "aten::native_batch_norm", {x, p, p, p, p}, {x, p, p});
    backward_.push_back([=, this] {
      ledger_.op("batch norm backward", "aten::native_batch_norm_backward", {x, x, p, p, p}, {x, p, p});
    });
    params_ += 2.0 * double(channels);
  }

  void relu(int64_t channels, int64_t hw) {
    const Tensor x = tensor({n_, channels, hw, hw}, DType::kFloat16);
    ledger_.op("relu forward", "aten::relu_", {x}, {x});
    backward_.push_back([=, this] { ledger_.op("relu backward", "aten::threshold_backward", {x, x}, {x}); });
  }

  void residualAdd(int64_t channels, int64_t hw) {
    const Tensor x = tensor({n_, channels, hw, hw}, DType::kFloat16);
    ledger_.op("residual add", "aten::add_.Tensor", {x, x}, {x});
    // Backward: the gradient reaching the block input is the sum of both branches.
    backward_.push_back([=, this] { ledger_.op("residual add (gradient sum)", "aten::add.Tensor", {x, x}, {x}); });
  }

  void bottleneck(int64_t inC, int64_t width, int64_t stride, int64_t hw) {
    const int64_t outC = 4 * width;
    const int64_t outHW = (hw - 1) / stride + 1;
    // torchvision v1.5: the stride sits on the 3x3 convolution.
    conv({inC, width, 1, 1, 0, hw}, true);
    batchNorm(width, hw);
    relu(width, hw);
    conv({width, width, 3, stride, 1, hw}, true);
    batchNorm(width, outHW);
    relu(width, outHW);
    conv({width, outC, 1, 1, 0, outHW}, true);
    batchNorm(outC, outHW);
    if (stride != 1 || inC != outC) {
      conv({inC, outC, 1, stride, 0, hw}, true);
      batchNorm(outC, outHW);
    }
    residualAdd(outC, outHW);
    relu(outC, outHW);
  }

  void build() {
    // Input batch: pinned fp32 images copied on the compute stream
    // (non_blocking .npu()), cast to fp16 and laid out as 5HD (C 3 -> 16).
    const Tensor images32 = tensor({n_, 3, 224, 224}, DType::kFloat32);
    const Tensor images16 = tensor({n_, 3, 224, 224}, DType::kFloat16);
    const Tensor images5hd = tensor({n_, 16, 224, 224}, DType::kFloat16);
    inputBytes_ = images32.numel() * 4;
    ledger_.op("input cast + TransData to 5HD", "aten::_to_copy", {images32}, {images16});
    ledger_.op("input cast + TransData to 5HD", "aten::npu_format_cast", {images16}, {images5hd});

    conv({3, 64, 7, 2, 3, 224}, false);
    batchNorm(64, 112);
    relu(64, 112);
    {
      const Tensor x = tensor({n_, 64, 112, 112}, DType::kFloat16);
      const Tensor y = tensor({n_, 64, 56, 56}, DType::kFloat16);
      const Tensor idx = tensor({n_, 64, 56, 56}, DType::kInt32);
      ledger_.op("max pool", "aten::max_pool2d_with_indices", {x}, {y, idx});
      backward_.push_back([=, this] {
        ledger_.op("max pool backward", "aten::max_pool2d_with_indices_backward", {y, x, idx}, {x});
      });
    }
    int64_t inC = 64, hw = 56;
    const int64_t blocks[] = {3, 4, 6, 3};
    const int64_t widths[] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        bottleneck(inC, widths[stage], stride, hw);
        hw = (hw - 1) / stride + 1;
        inC = 4 * widths[stage];
      }
    }
    // Head: global average pool, fc 2048 -> 1000 (addmm with W.t()), loss.
    {
      const Tensor x = tensor({n_, 2048, 7, 7}, DType::kFloat16);
      const Tensor pooled = tensor({n_, 2048}, DType::kFloat16);
      const Tensor w = tensor({1000, 2048}, DType::kFloat16);
      const Tensor bias = tensor({1000}, DType::kFloat16);
      const Tensor logits = tensor({n_, 1000}, DType::kFloat16);
      const Tensor logits32 = tensor({n_, 1000}, DType::kFloat32);
      const Tensor target = tensor({n_}, DType::kInt32);
      const Tensor scalar = tensor({}, DType::kFloat32);
      ledger_.op("avg pool + fc + loss", "aten::mean.dim", {x}, {pooled});
      ledger_.op("avg pool + fc + loss", "aten::addmm", {bias, pooled, transposed(w)}, {logits});
      ledger_.op("avg pool + fc + loss", "aten::_to_copy", {logits}, {logits32});
      ledger_.op("avg pool + fc + loss", "aten::_log_softmax", {logits32}, {logits32});
      ledger_.op("avg pool + fc + loss", "aten::nll_loss_forward", {logits32, target}, {scalar, scalar});
      params_ += 1000.0 * 2048 + 1000;
      // Backward of the head, first in the backward pass.
      ledger_.op("avg pool + fc + loss backward", "aten::nll_loss_backward", {scalar, logits32, target}, {logits32});
      ledger_.op("avg pool + fc + loss backward", "aten::_log_softmax_backward_data", {logits32, logits32},
                 {logits32});
      ledger_.op("avg pool + fc + loss backward", "aten::_to_copy", {logits32}, {logits});
      ledger_.op("avg pool + fc + loss backward", "aten::mm", {logits, w}, {pooled});
      ledger_.op("avg pool + fc + loss backward", "aten::mm", {transposed(logits), pooled}, {w});
      ledger_.op("avg pool + fc + loss backward", "aten::sum.dim_IntList", {logits}, {bias});
      ledger_.op("avg pool + fc + loss backward", "aten::avg_pool2d_backward", {pooled, x}, {x});
    }
    for (auto it = backward_.rbegin(); it != backward_.rend(); ++it) (*it)();

    // apex AMP O2 with combined (flattened) gradients and NpuFusedSGD: fp16
    // grads unscaled into fp32 master grads, momentum SGD on fp32 master
    // weights, master copied back to the fp16 model, grads zeroed.
    const int64_t p = int64_t(params_);
    const Tensor g16 = tensor({p}, DType::kFloat16), g32 = tensor({p}, DType::kFloat32);
    ledger_.op("optimizer (O2 fused SGD)", "aten::_amp_foreach_non_finite_check_and_unscale_", {g16}, {g32});
    ledger_.op("optimizer (O2 fused SGD)", "aten::_fused_sgd_", {g32, g32, g32}, {g32, g32});
    ledger_.op("optimizer (O2 fused SGD)", "aten::_to_copy", {g32}, {g16});
    ledger_.op("optimizer (O2 fused SGD)", "aten::zero_", {}, {g16});
  }

  double parameters() const { return params_; }
  double inputBytes() const { return inputBytes_; }

 private:
  Ledger& ledger_;
  int64_t n_;
  double params_ = 0;
  double inputBytes_ = 0;
  std::vector<std::function<void()>> backward_;
};

double resnetImagesPerSecond(const runtime::ChipSpec& chip, int64_t batch, bool print) {
  const perf::CostModel model(chip);
  Ledger ledger(model, perf::CostOptions{});
  ResNetStep step(ledger, batch);
  step.build();
  ledger.add("input H2D (pinned)", Unit::kTransfer, double(model.hostToDevice(uint64_t(step.inputBytes()), true)) * 1e-9);
  const double seconds = ledger.totalSeconds();
  if (print) {
    std::printf("   %s: %.1f ms per step of %lld images; %.2f M parameters; model %.2f TFLOP/step -> %.0f TFLOPS"
                " (%.0f%% of peak)\n",
                chip.socName.c_str(), seconds * 1e3, (long long)batch, step.parameters() / 1e6,
                ledger.totalFlops() / 1e12, ledger.totalFlops() / seconds / 1e12,
                100.0 * ledger.totalFlops() / seconds / model.peakFlops(perf::CubePrecision::kHalf));
    ledger.print("     ");
  }
  return double(batch) / seconds;
}

void validateResNet(Verdict& verdict) {
  std::printf("\n2. ResNet-50 training throughput per card (§3.2)\n");
  std::printf(
      "   Reference: Ascend ModelZoo PyTorch ResNet-50 README, 1 card 1,678 FPS (1p row, 8p 13,212): AMP O2 fp16\n"
      "   (apex), batch 256 per card, 224x224, SGD momentum. The README names no chip; its script targets torch\n"
      "   1.5/1.8 and was first published in 2022, before PyTorch ran on the 910B, so it was measured on an\n"
      "   Ascend 910 (A1). The only A2 ResNet-50 figure is 8p \"Atlas 900 A2 PoDc\" 14,321 FPS (1,790 per card;\n"
      "   the gradient all-reduce of 51 MB overlaps the backward, so 8p per card ~ 1p).\n"
      "   Model: torchvision ResNet-50 v1.5 forward + backward + fused SGD; every conv, BN, ReLU, add, pool and FC\n"
      "   priced as the aten operator the backend sees; device time summed.\n");
  const double b2 = resnetImagesPerSecond(runtime::findChip("Ascend910B2"), 256, true);
  const double a1 = resnetImagesPerSecond(runtime::findChip("Ascend910A"), 256, false);
  runtime::ChipSpec iniBandwidth = runtime::findChip("Ascend910B2");
  iniBandwidth.hbmBandwidthGbps = 1382;  // §2.2: 32 B/cycle x 24 cores x 1.8 GHz, the ini-derived figure
  const double b2Ini = resnetImagesPerSecond(iniBandwidth, 256, false);
  std::printf("  %-46s %10s %10s %-9s %8s\n", "case", "estimate", "reference", "unit", "error");
  printCheck(verdict, "ResNet-50 910A (the reference's chip), bs 256", a1, 1678.0, 20, "img/s");
  printCheck(verdict, "ResNet-50 910B2 vs A2 PoDc 14,321 / 8", b2, 14321.0 / 8, 20, "img/s");
  printInfo("ResNet-50 910B2 vs the 1p 1,678", b2, 1678.0, "img/s");
  printInfo("  910B2 if HBM peak were the ini's 1.38 TB/s", b2Ini, 14321.0 / 8, "img/s");
  std::printf(
      "   Where it disagrees: the model prices each operator as a well-tuned kernel at the achievable HBM\n"
      "   bandwidth (1.36 TB/s on 910B2); BN, ReLU and the residual adds are ~60%% of its step, all HBM-bound.\n"
      "   On the 910A (1.04 TB/s, 262 TFLOPS) that lands on the published 1p figure. On the 910B2 it is ~29%%\n"
      "   faster than the A2 PoDc per-card figure: the 910B's achievable bandwidth is uncertain (§7: 1.6 TB/s\n"
      "   press vs 1.38 ini-derived; the ini figure alone halves the error), and the model leaves out eager\n"
      "   kernel inefficiencies, TransData at format boundaries and the host data pipeline (which the\n"
      "   torchvision_npu DVPP path exists to relieve) - losses that weigh more on the faster chip.\n");
}

// ------------------------------------------------------- 3. LLaMA-2-7B

struct LlamaSetup {
  int64_t hidden = 4096, layers = 32, heads = 32, ffn = 11008, vocab = 32000, seq = 4096;
  int64_t tensorParallel = 8, microBatch = 4, globalBatch = 16, dataParallel = 1;
};

// Exposed tensor-parallel collectives, by the alpha-beta form of §5:
// t = alpha + S (n-1)/n / B_bus with the 8-NPU HCCS full-mesh bus bandwidth.
constexpr double kCollectiveAlphaSeconds = 20e-6;  // §5: alpha ~10-30 us [U]
constexpr double kBusBandwidth = 126e9;            // §5: 8p all-reduce busbw ~126 GB/s, all-gather ~130 [S/D]

double collectiveSeconds(double fullBytes, int64_t ranks) {
  return kCollectiveAlphaSeconds + fullBytes * double(ranks - 1) / double(ranks) / kBusBandwidth;
}

struct LlamaResult {
  double computeSeconds = 0;
  double communicationSeconds = 0;
  double communicationNoOverlapSeconds = 0;
  double modelFlops = 0;
  double tokensPerStep = 0;
};

LlamaResult llamaStep(const runtime::ChipSpec& chip, const LlamaSetup& s, bool print) {
  const perf::CostModel model(chip);
  Ledger ledger(model, perf::CostOptions{});
  const DType bf = DType::kBFloat16, f32 = DType::kFloat32;
  const int64_t tp = s.tensorParallel;
  const int64_t tokens = s.microBatch * s.seq;  // per micro-batch
  const int64_t shard = tokens / tp;            // sequence-parallel shard
  const int64_t h = s.hidden, headDim = s.hidden / s.heads, localHeads = s.heads / tp;
  const int64_t qkv = 3 * h / tp, attnOut = h / tp, gateUp = 2 * s.ffn / tp, ffnLocal = s.ffn / tp;
  const int64_t vocabLocal = s.vocab / tp;
  const int64_t microBatches = s.globalBatch / (s.microBatch * s.dataParallel);

  const Tensor xs = tensor({shard, h}, bf);  // SP shard of the hidden states
  const Tensor x = tensor({tokens, h}, bf);  // gathered
  const Tensor normW = tensor({h}, bf), rstd = tensor({shard, 1}, f32);
  const Tensor wQkv = tensor({qkv, h}, bf), yQkv = tensor({tokens, qkv}, bf);
  const Tensor q = tensor({s.microBatch, localHeads, s.seq, headDim}, bf);
  const Tensor cosSin = tensor({1, 1, s.seq, headDim}, bf);
  const Tensor lse = tensor({s.microBatch, localHeads, s.seq}, f32);
  const Tensor ctx = tensor({tokens, attnOut}, bf), wOut = tensor({h, attnOut}, bf);
  const Tensor wGateUp = tensor({gateUp, h}, bf), yGateUp = tensor({tokens, gateUp}, bf);
  const Tensor act = tensor({tokens, ffnLocal}, bf), wDown = tensor({h, ffnLocal}, bf);
  const std::vector<int64_t> causal = {1, int64_t(perf::AttentionLayout::kBNSD), localHeads};

  // Megatron's gradient-accumulation fusion: the weight gradient GEMM adds
  // into the fp32 main_grad (C read and written in fp32).
  auto weightGrad = [&](const std::string& category, const Tensor& dy, const Tensor& xIn, int64_t rows,
                        int64_t cols) {
    const Tensor mainGrad = tensor({rows, cols}, f32);
    return ledger.op(category, "aten::addmm", {mainGrad, transposed(dy), xIn}, {mainGrad});
  };
  // Tensor-parallel collectives (sequence parallel: all-gather / reduce-scatter
  // of the [tokens, hidden] activations), exposed where Megatron's code does
  // not overlap them: forward all 4 per layer; backward the all-gather of the
  // row-parallel layers' output gradient (2), while the re-gather of a
  // column-parallel layer's input overlaps its data-gradient GEMM and the
  // reduce-scatter of its input gradient overlaps its weight-gradient GEMM
  // (LinearWithGradAccumulationAndAsyncCommunication), exposing only the rest.
  const double activationBytes = double(tokens) * double(h) * 2.0;
  const double collective = collectiveSeconds(activationBytes, tp);
  double exposedPerMicroBatch = 0, collectivesPerMicroBatch = 0;
  auto overlapped = [&](double compute) { return std::max(0.0, collective - compute); };

  for (int64_t layer = 0; layer < s.layers; ++layer) {
    // ---- forward
    ledger.op("rmsnorm", "npu::npu_rms_norm", {xs, normW}, {xs, rstd});
    ledger.op("qkv / out projection", "aten::linear", {x, wQkv}, {yQkv});
    ledger.op("rotary (fused)", "npu::npu_rotary_mul", {q, cosSin, cosSin}, {q}, {}, 2);
    ledger.op("flash attention forward", "npu::npu_fusion_attention", {q, q, q}, {q, lse}, causal);
    ledger.op("qkv / out projection", "aten::linear", {ctx, wOut}, {x});
    ledger.op("residual add", "aten::add.Tensor", {xs, xs}, {xs});
    ledger.op("rmsnorm", "npu::npu_rms_norm", {xs, normW}, {xs, rstd});
    ledger.op("mlp gate_up / down", "aten::linear", {x, wGateUp}, {yGateUp});
    ledger.op("swiglu", "npu::npu_swiglu", {yGateUp}, {act});
    ledger.op("mlp gate_up / down", "aten::linear", {act, wDown}, {x});
    ledger.op("residual add", "aten::add.Tensor", {xs, xs}, {xs});
    // ---- backward
    ledger.op("residual add", "aten::add.Tensor", {xs, xs}, {xs});
    ledger.op("mlp gate_up / down backward", "aten::mm", {x, wDown}, {act});
    weightGrad("mlp gate_up / down backward", x, act, h, ffnLocal);
    ledger.op("swiglu", "npu::npu_swiglu_backward", {act, yGateUp}, {yGateUp});
    const double gateUpData = ledger.op("mlp gate_up / down backward", "aten::mm", {yGateUp, wGateUp}, {x});
    const double gateUpWeight = weightGrad("mlp gate_up / down backward", yGateUp, x, gateUp, h);
    ledger.op("rmsnorm", "npu::npu_rms_norm_backward", {xs, xs, rstd, normW}, {xs, normW});
    ledger.op("residual add", "aten::add.Tensor", {xs, xs}, {xs});
    ledger.op("qkv / out projection backward", "aten::mm", {x, wOut}, {ctx});
    weightGrad("qkv / out projection backward", x, ctx, h, attnOut);
    ledger.op("flash attention backward", "npu::npu_fusion_attention_grad", {q, q, q, q, q, lse}, {q, q, q}, causal);
    ledger.op("rotary (fused)", "npu::npu_rotary_mul_backward", {q, cosSin, cosSin}, {q}, {}, 2);
    const double qkvData = ledger.op("qkv / out projection backward", "aten::mm", {yQkv, wQkv}, {x});
    const double qkvWeight = weightGrad("qkv / out projection backward", yQkv, x, qkv, h);
    ledger.op("rmsnorm", "npu::npu_rms_norm_backward", {xs, xs, rstd, normW}, {xs, normW});
    exposedPerMicroBatch += 4 * collective + 2 * collective + overlapped(gateUpData) + overlapped(gateUpWeight) +
                            overlapped(qkvData) + overlapped(qkvWeight);
    collectivesPerMicroBatch += 10;
  }
  // Embedding (vocabulary-parallel), final norm, output layer, loss.
  {
    const Tensor ids = tensor({tokens}, DType::kInt64);
    const Tensor table = tensor({vocabLocal, h}, bf), table32 = tensor({vocabLocal, h}, f32);
    const Tensor logits = tensor({tokens, vocabLocal}, bf), logits32 = tensor({tokens, vocabLocal}, f32);
    const Tensor perToken = tensor({tokens}, f32);
    ledger.op("embedding / output layer / loss", "aten::embedding", {table, ids}, {x});
    ledger.op("embedding / output layer / loss", "npu::npu_rms_norm", {xs, normW}, {xs, rstd});
    ledger.op("embedding / output layer / loss", "aten::linear", {x, table}, {logits});
    ledger.op("embedding / output layer / loss", "aten::_to_copy", {logits}, {logits32});
    ledger.op("embedding / output layer / loss", "aten::amax", {logits32}, {perToken});
    ledger.op("embedding / output layer / loss", "aten::sub.Tensor", {logits32, perToken}, {logits32});
    ledger.op("embedding / output layer / loss", "aten::exp", {logits32}, {logits32});
    ledger.op("embedding / output layer / loss", "aten::sum.dim_IntList", {logits32}, {perToken});
    ledger.op("embedding / output layer / loss", "aten::div.Tensor", {logits32, perToken}, {logits32});
    ledger.op("embedding / output layer / loss backward", "aten::sub.Tensor", {logits32, logits32}, {logits32});
    ledger.op("embedding / output layer / loss backward", "aten::_to_copy", {logits32}, {logits});
    const double outputData = ledger.op("embedding / output layer / loss backward", "aten::mm", {logits, table}, {x});
    const double outputWeight = weightGrad("embedding / output layer / loss backward", logits, x, vocabLocal, h);
    // Output layer: gather forward, re-gather and scatter backward; embedding:
    // scatter forward, gather backward.
    exposedPerMicroBatch += 3 * collective + overlapped(outputData) + overlapped(outputWeight);
    collectivesPerMicroBatch += 5;
    ledger.op("embedding / output layer / loss backward", "npu::npu_rms_norm_backward", {xs, xs, rstd, normW},
              {xs, normW});
    ledger.op("embedding / output layer / loss backward", "aten::embedding_dense_backward", {x, ids}, {table32});
  }
  // Every micro-batch runs the same operators.
  const double perMicroBatch = ledger.totalSeconds();
  const double perMicroBatchFlops = ledger.totalFlops();

  // Optimizer, once per step: Adam on this rank's 1/TP of the parameters,
  // fp32 main params and grads (Megatron --bf16), bf16 copy back, gradient
  // norm for clipping and its scaling, main grads zeroed.
  const double params = double(s.layers) * (4.0 * h * h + 3.0 * h * s.ffn) / double(tp) +
                        2.0 * double(s.vocab) * h / double(tp) + double(2 * s.layers + 1) * h;
  Ledger optimizer(model, perf::CostOptions{});
  const Tensor p32 = tensor({int64_t(params)}, f32), p16 = tensor({int64_t(params)}, bf);
  optimizer.op("optimizer (Adam, fp32 main params)", "aten::_foreach_norm", {p32}, {tensor({}, f32)});
  optimizer.op("optimizer (Adam, fp32 main params)", "aten::_foreach_mul_", {p32}, {p32});
  optimizer.op("optimizer (Adam, fp32 main params)", "aten::_fused_adamw_", {p32, p32, p32, p32}, {p32, p32, p32});
  optimizer.op("optimizer (Adam, fp32 main params)", "aten::_to_copy", {p32}, {p16});
  optimizer.op("optimizer (Adam, fp32 main params)", "aten::zero_", {}, {p32});

  const double communication = double(microBatches) * exposedPerMicroBatch;
  const double communicationNoOverlap = double(microBatches) * collectivesPerMicroBatch * collective;

  LlamaResult result;
  result.computeSeconds = double(microBatches) * perMicroBatch + optimizer.totalSeconds();
  result.communicationSeconds = communication;
  result.communicationNoOverlapSeconds = communicationNoOverlap;
  result.modelFlops = double(microBatches) * perMicroBatchFlops;
  result.tokensPerStep = double(s.globalBatch) * double(s.seq);
  if (print) {
    std::printf("   Per micro-batch (%lld x %lld tokens) on one NPU of %s:\n", (long long)s.microBatch,
                (long long)s.seq, chip.socName.c_str());
    ledger.print("     ");
    std::printf("     optimizer step: %.1f ms for %.0f M parameters per NPU\n", optimizer.totalSeconds() * 1e3,
                params / 1e6);
    std::printf("     tensor-parallel collectives: %.0f per micro-batch of %.0f MiB, %.2f ms each (alpha-beta, §5);\n"
                "     exposed after Megatron's backward overlap: %.1f ms per micro-batch (%.1f ms if none overlapped)\n",
                collectivesPerMicroBatch, activationBytes / (1 << 20), collective * 1e3, exposedPerMicroBatch * 1e3,
                collectivesPerMicroBatch * collective * 1e3);
  }
  return result;
}

double llamaTokensPerSecond(const runtime::ChipSpec& chip, const LlamaSetup& setup) {
  const LlamaResult r = llamaStep(chip, setup, false);
  return r.tokensPerStep / (r.computeSeconds + r.communicationSeconds) /
         double(setup.tensorParallel * setup.dataParallel);
}

void validateLlama(Verdict& verdict) {
  std::printf("\n3. LLaMA-2-7B training throughput per NPU (§3.2)\n");
  std::printf(
      "   Reference: AscendSpeed/ModelLink LLaMA2 README, 2730 tokens/s/p (131.96 TFLOPs/s quoted) on 8 Ascend\n"
      "   NPUs (Atlas A2; 910B). Setup of that README and its pretrain_llama2_7b_ptd.sh: TP 8, PP 1, sequence\n"
      "   parallel, micro-batch 4, global batch 16 (DP 1: 4 micro-batches per step), seq 4096, bf16, flash\n"
      "   attention, fused RoPE, fused gate/up (mlp-layer-fusion), no recomputation, Adam. Modelled: the\n"
      "   per-NPU operators of that TP-8 step (1/8 of every GEMM, 4 of 32 heads, SP-sharded norms and adds) on\n"
      "   910B2, plus its exposed TP collectives by the §5 alpha-beta form (not the library's collective model).\n");
  const LlamaSetup setup;
  const LlamaResult r = llamaStep(runtime::findChip("Ascend910B2"), setup, true);
  const double total = r.computeSeconds + r.communicationSeconds;
  const double perNpu = double(setup.tensorParallel * setup.dataParallel);
  const double tokensPerSecond = r.tokensPerStep / total / perNpu;
  const double computeOnly = r.tokensPerStep / r.computeSeconds / perNpu;
  std::printf("   step: compute %.3f s + TP communication %.3f s = %.3f s for %.0f tokens on %.0f NPUs; model FLOPs\n"
              "   per NPU %.1f TFLOP -> %.1f TFLOPS achieved, %.0f%% MFU of 353.9\n",
              r.computeSeconds, r.communicationSeconds, total, r.tokensPerStep, perNpu, r.modelFlops / 1e12,
              r.modelFlops / total / 1e12, 100.0 * r.modelFlops / total / 353.9e12);
  std::printf("  %-46s %10s %10s %-9s %8s\n", "case", "estimate", "reference", "unit", "error");
  printCheck(verdict, "LLaMA-2-7B TP8 910B2, compute + TP comm", tokensPerSecond, 2730.0, 20, "tok/s/p");
  printInfo("LLaMA-2-7B TP8 910B2, compute only", computeOnly, 2730.0, "tok/s/p");
  printInfo("LLaMA-2-7B TP8 910B2, no comm overlap",
            r.tokensPerStep / (r.computeSeconds + r.communicationNoOverlapSeconds) / perNpu, 2730.0, "tok/s/p");
  for (const char* other : {"Ascend910B1", "Ascend910B3"}) {
    const std::string label = std::string("LLaMA-2-7B TP8 ") + other + ", compute + TP comm";
    printInfo(label.c_str(), llamaTokensPerSecond(runtime::findChip(other), setup), 2730.0, "tok/s/p");
  }
  printInfo("  (same vs MindFormers 2465 tok/s/p)", tokensPerSecond, 2465.0, "tok/s/p");
  std::printf(
      "   Where it disagrees: the model runs the per-NPU GEMMs at ~320 TFLOPS (90%% of peak, as the isolated\n"
      "   §3.3 benchmarks do) and reaches %.0f%% MFU; the reference's own count (131.96 TFLOPs/s, full attention)\n"
      "   is 37%%. Unmodelled: HBM and link contention between the overlapped HCCL collectives and compute,\n"
      "   flash-attention efficiency of the 2023 CANN release (causal blocks skipped here), Megatron's\n"
      "   Python/host time between micro-batches, and the SKU (910B3 would be %+.0f%%). The exposed-communication\n"
      "   assumption is the largest single lever: with no overlap at all the estimate is %+.0f%% off.\n",
      100.0 * r.modelFlops / total / 353.9e12,
      errorPercent(llamaTokensPerSecond(runtime::findChip("Ascend910B3"), setup), 2730.0),
      errorPercent(r.tokensPerStep / (r.computeSeconds + r.communicationNoOverlapSeconds) / perNpu, 2730.0));
}

// ----------------------------------------- 4. host-side round trip (info)

void validateRoundTrip() {
  const perf::CostModel model(runtime::findChip("Ascend910B2"));
  std::printf("\n4. Host round trip (§3.3, pypto #1919): (x.npu() + y.npu()).cpu(), 128x128 fp32, pageable\n");
  const uint64_t bytes = 128 * 128 * 4;
  const double dispatch = double(model.hostDispatchNs(1)) * 1e-3;
  const double h2d = double(model.hostToDevice(bytes, false)) * 1e-3;
  const double d2h = double(model.deviceToHost(bytes)) * 1e-3;
  const Tensor t = tensor({128, 128}, DType::kFloat32);
  const TensorDesc in[] = {t.desc(), t.desc()};
  const TensorDesc out[] = {t.desc()};
  const double add = double(model.price(OperatorKind::kElementwise, in, 2, out, 1, perf::Placement::kAiCore,
                                        perf::CostOptions{})
                                .deviceNs) *
                     1e-3;
  // Two synchronous pageable copies, the add's dispatch, then .cpu():
  // dispatch, wait for the add, copy back.
  const double total = 2 * (dispatch + h2d) + dispatch + std::max(add, dispatch) + d2h;
  std::printf("  %-46s %10s %10s %-9s %8s\n", "case", "estimate", "reference", "unit", "error");
  printInfo("tiny add round trip", total, 130.0, "us");
}

}  // namespace

int main(int argc, char** argv) {
  const bool strict = argc > 1 && std::strcmp(argv[1], "--strict") == 0;
  std::printf("npusim performance model validation (shared/reference/ascend-hardware.md §3)\n");
  Verdict verdict;
  validateMatmul(runtime::findChip("Ascend910B2"), verdict);
  validateResNet(verdict);
  validateLlama(verdict);
  validateRoundTrip();
  std::printf("\n%d of %d checks within target.\n", verdict.checks - verdict.failures, verdict.checks);
  return strict && verdict.failures > 0 ? 1 : 0;
}
