// Mixture-of-experts operators of torch_npu: npu_grouped_matmul (§4.5), the
// token permute / unpermute pair with its int32 inverse map (§4.6), and the
// inference routing ops npu_moe_gating_top_k_softmax, npu_moe_init_routing_v2
// (dropless, unquantised) and npu_moe_finalize_routing (§5.4, §5.5).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;
using OptionalTensorList = std::optional<at::TensorList>;

// ------------------------------------------------------------ grouped matmul

bool present(const OptionalTensorList& list) { return list.has_value() && !list->empty(); }

Tensor activation(const Tensor& y, int64_t actType) {
  switch (actType) {
    case 0: return y;
    case 1: return at::relu(y);
    case 2: return at::gelu(y, "tanh");
    case 4: return y * at::sigmoid(1.702 * y);
    case 5: return at::silu(y);
    default: NPU_OPS_CHECK_VALUE(false, "npu_grouped_matmul: act_type ", actType, " is not supported"); return y;
  }
}

// Group sizes (rows along M for group_type 0, along K for group_type 2).
std::vector<int64_t> groupSizes(const Tensor& groupList, int64_t groupListType, int64_t total) {
  NPU_OPS_CHECK(groupList.dim() == 1, "npu_grouped_matmul: group_list must be 1-dimensional, but got ",
                groupList.dim(), "-dimensional");
  NPU_OPS_CHECK_VALUE(groupListType == 0 || groupListType == 1,
                      "npu_grouped_matmul: group_list_type must be 0 or 1 for a 1-dimensional group_list, but got ",
                      groupListType);
  const Tensor values = groupList.to(at::kLong).contiguous();
  const int64_t* data = values.data_ptr<int64_t>();
  std::vector<int64_t> sizes;
  int64_t previous = 0, sum = 0;
  for (int64_t e = 0; e < values.numel(); ++e) {
    const int64_t size = groupListType == 0 ? data[e] - previous : data[e];
    NPU_OPS_CHECK_VALUE(size >= 0, "npu_grouped_matmul: group_list must be ",
                        groupListType == 0 ? "non-decreasing" : "non-negative", ", but got ", groupList);
    previous = groupListType == 0 ? data[e] : previous;
    sum += size;
    sizes.push_back(size);
  }
  NPU_OPS_CHECK_VALUE(sum <= total, "npu_grouped_matmul: group_list covers ", sum, " rows, but the input has ", total);
  return sizes;
}

// Even split, for estimate-only mode where group_list has no data.
std::vector<int64_t> balancedSizes(int64_t groups, int64_t total) {
  std::vector<int64_t> sizes(groups, groups > 0 ? total / groups : 0);
  if (groups > 0) sizes.back() += total - (total / groups) * groups;
  return sizes;
}

Tensor weightOf(at::TensorList weights, int64_t e) { return weights.size() == 1 ? weights[0][e] : weights[e]; }

struct GroupedMatmulResult {
  std::vector<Tensor> outputs;
  perf::FusedKernelWork work;
};

GroupedMatmulResult groupedMatmulHost(at::TensorList x, at::TensorList weight, const OptionalTensorList& bias,
                                      const OptionalTensor& groupList, int64_t splitItem, int64_t groupType,
                                      int64_t groupListType, int64_t actType) {
  NPU_OPS_CHECK_VALUE(groupType == -1 || groupType == 0 || groupType == 2,
                      "group_type only supports -1, 0 and 2, but got ", groupType);
  NPU_OPS_CHECK(!x.empty() && !weight.empty(), "npu_grouped_matmul: x and weight must not be empty");
  NPU_OPS_CHECK(x.size() <= 128 && weight.size() <= 128, "npu_grouped_matmul: the lists must hold at most 128 tensors");
  const bool single = splitItem == 2 || splitItem == 3;
  GroupedMatmulResult result;
  auto& work = result.work;
  if (!perf::fusedCubePrecision(perfDtype(x[0].scalar_type()), work.precision, work.operandBytes)) {
    work.precision = perf::CubePrecision::kFloat32, work.operandBytes = 4;
  }
  for (const Tensor& t : x) work.hbmBytes += bytesOf(t);
  for (const Tensor& t : weight) work.hbmBytes += bytesOf(t);
  auto addBias = [&](Tensor y, size_t e) {
    if (present(bias)) y = y + (bias->size() == 1 && bias->at(0).dim() == 2 ? bias->at(0)[e] : bias->at(e)).to(y.scalar_type());
    return y;
  };
  auto finish = [&](const Tensor& yFloat, c10::ScalarType dtype) { return activation(yFloat, actType).to(dtype); };

  if (groupType == -1) {
    NPU_OPS_CHECK(x.size() == weight.size(), "npu_grouped_matmul: without grouping x and weight need the same "
                  "number of tensors, but got ", x.size(), " and ", weight.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const Tensor y = addBias(at::matmul(x[i].to(at::kFloat), weight[i].to(at::kFloat)), i);
      result.outputs.push_back(finish(y, x[i].scalar_type()));
      const int64_t k = x[i].size(-1);
      work.addGemm(perf::GemmShape{1, k > 0 ? x[i].numel() / k : 0, weight[i].size(-1), k});
    }
    if (single) result.outputs = {at::cat(result.outputs, 0)};
  } else if (groupType == 0) {
    NPU_OPS_CHECK(groupList.has_value(), "npu_grouped_matmul: group_type 0 needs group_list");
    const Tensor input = x.size() == 1 ? x[0] : at::cat(x.vec(), 0);
    NPU_OPS_CHECK(input.dim() == 2, "npu_grouped_matmul: x must be 2-dimensional for group_type 0, but got ",
                  input.dim(), "-dimensional");
    const int64_t groups = weight.size() == 1 ? weight[0].size(0) : static_cast<int64_t>(weight.size());
    NPU_OPS_CHECK(groupList->numel() == groups, "npu_grouped_matmul: group_list has ", groupList->numel(),
                  " groups, but weight has ", groups);
    const int64_t n = weightOf(weight, 0).size(-1);
    std::vector<int64_t> sizes;
    if (input.is_meta()) {
      NPU_OPS_CHECK(single, "npu_grouped_matmul: in estimate-only mode the group sizes are unknown; use split_item "
                    "2 or 3 (one output tensor)");
      sizes = balancedSizes(groups, input.size(0));
      result.outputs = {at::empty({input.size(0), n}, input.options())};
    } else {
      sizes = groupSizes(*groupList, groupListType, input.size(0));
      std::vector<Tensor> pieces;
      int64_t row = 0;
      for (int64_t e = 0; e < groups; ++e) {
        const Tensor rows = input.slice(0, row, row + sizes[e]);
        row += sizes[e];
        pieces.push_back(finish(addBias(at::matmul(rows.to(at::kFloat), weightOf(weight, e).to(at::kFloat)), e),
                                input.scalar_type()));
      }
      // Rows beyond the last group are not computed; the single output keeps them as zeros.
      if (single) {
        Tensor out = at::zeros({input.size(0), n}, input.options());
        if (row > 0) out.slice(0, 0, row).copy_(at::cat(pieces, 0));
        result.outputs = {out};
      } else {
        result.outputs = pieces;
      }
    }
    for (int64_t e = 0; e < groups; ++e) work.addGemm(perf::GemmShape{1, sizes[e], n, input.size(1)});
  } else {
    // group_type 2: split K; x [K, M] with its M columns grouped, weight [M, N] rows grouped.
    NPU_OPS_CHECK(groupList.has_value(), "npu_grouped_matmul: group_type 2 needs group_list");
    NPU_OPS_CHECK(x.size() == 1 && weight.size() == 1, "npu_grouped_matmul: group_type 2 takes one x and one weight");
    const Tensor& a = x[0];
    const Tensor& b = weight[0];
    NPU_OPS_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0),
                  "npu_grouped_matmul: group_type 2 needs x [K, M] and weight [M, N], but got ", a.sizes(), " and ",
                  b.sizes());
    const int64_t groups = groupList->numel();
    std::vector<int64_t> sizes;
    if (a.is_meta()) {
      sizes = balancedSizes(groups, a.size(1));
      result.outputs = {at::empty({groups, a.size(0), b.size(1)}, a.options())};
    } else {
      sizes = groupSizes(*groupList, groupListType, a.size(1));
      std::vector<Tensor> pieces;
      int64_t column = 0;
      for (int64_t e = 0; e < groups; ++e) {
        const Tensor product = at::matmul(a.slice(1, column, column + sizes[e]).to(at::kFloat),
                                          b.slice(0, column, column + sizes[e]).to(at::kFloat));
        column += sizes[e];
        pieces.push_back(finish(addBias(product, e), a.scalar_type()));
      }
      result.outputs = single ? std::vector<Tensor>{at::stack(pieces)} : pieces;
    }
    for (int64_t e = 0; e < groups; ++e) work.addGemm(perf::GemmShape{1, a.size(0), b.size(1), sizes[e]});
  }
  for (const Tensor& t : result.outputs) work.hbmBytes += bytesOf(t);
  return result;
}

void checkUnquantised(const OptionalTensorList& scale, const OptionalTensorList& offset,
                      const OptionalTensorList& antiquantScale, const OptionalTensorList& antiquantOffset,
                      const OptionalTensorList& perTokenScale, const OptionalTensorList& activationInput) {
  TORCH_CHECK(!present(scale) && !present(offset) && !present(antiquantScale) && !present(antiquantOffset) &&
                  !present(perTokenScale) && !present(activationInput),
              "npu_grouped_matmul: the quantised forms (scale, offset, antiquant_*, per_token_scale, "
              "activation_input) are not supported by npusim.",
              notSupported());
}

#define NPUSIM_GMM_PARAMS                                                                                         \
  at::TensorList x, at::TensorList weight, const OptionalTensorList &bias, const OptionalTensorList &scale,       \
      const OptionalTensorList &offset, const OptionalTensorList &antiquantScale,                                  \
      const OptionalTensorList &antiquantOffset, const OptionalTensorList &perTokenScale,                          \
      const OptionalTensor &groupList, const OptionalTensorList &activationInput,                                  \
      const OptionalTensorList &activationQuantScale, const OptionalTensorList &activationQuantOffset,             \
      std::optional<int64_t> splitItem, std::optional<int64_t> groupType, std::optional<int64_t> groupListType,    \
      std::optional<int64_t> actType, at::OptionalIntArrayRef tuningConfig, std::optional<int64_t> outputDtype,    \
      std::optional<int64_t> xDtype, std::optional<int64_t> weightDtype, std::optional<int64_t> scaleDtype,        \
      std::optional<int64_t> perTokenScaleDtype

int64_t effectiveGroupType(std::optional<int64_t> groupType, const OptionalTensor& groupList) {
  if (groupType.has_value()) return *groupType;
  return groupList.has_value() ? 0 : -1;
}

std::vector<Tensor> groupedMatmulMeta(NPUSIM_GMM_PARAMS) {
  checkUnquantised(scale, offset, antiquantScale, antiquantOffset, perTokenScale, activationInput);
  return groupedMatmulHost(x, weight, bias, groupList, splitItem.value_or(0), effectiveGroupType(groupType, groupList),
                           groupListType.value_or(0), actType.value_or(0))
      .outputs;
}

std::vector<Tensor> groupedMatmulNpu(NPUSIM_GMM_PARAMS) {
  requireChip("npu_grouped_matmul",
              {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend310P, ChipFamily::kAscend950});
  checkUnquantised(scale, offset, antiquantScale, antiquantOffset, perTokenScale, activationInput);
  for (const Tensor& t : x) requireNpuTensors({&t});
  for (const Tensor& t : weight) requireNpuTensors({&t});
  requireNpuTensor(groupList);
  const int device = x[0].device().index();
  std::vector<Tensor> hostX, hostWeight, hostBias;
  for (const Tensor& t : x) hostX.push_back(hostOperand(t));
  for (const Tensor& t : weight) hostWeight.push_back(hostOperand(t));
  if (present(bias)) {
    for (const Tensor& t : *bias) hostBias.push_back(hostOperand(t));
  }
  const OptionalTensorList hostBiasList = present(bias) ? OptionalTensorList(hostBias) : std::nullopt;
  GroupedMatmulResult result =
      groupedMatmulHost(hostX, hostWeight, hostBiasList, hostOperand(groupList), splitItem.value_or(0),
                        effectiveGroupType(groupType, groupList), groupListType.value_or(0), actType.value_or(0));
  chargeFusedKernel(device, "npu::npu_grouped_matmul", perf::OperatorKind::kMatmul, result.work);
  std::vector<Tensor> outputs;
  for (const Tensor& t : result.outputs) outputs.push_back(deviceResult(t, device));
  return outputs;
}

// ------------------------------------------------------------ token permute

void checkTokens(const Tensor& tokens, const Tensor& indices) {
  NPU_OPS_CHECK(tokens.dim() == 2, "The dims of input tokens should be 2 dimensional, but got ", tokens.dim(),
                "-dimensional.");
  NPU_OPS_CHECK(indices.dim() == 1 || indices.dim() == 2,
                "The dims of input indices should be 2 or 1 dimensional, but got ", indices.dim(), "-dimensional.");
}

int64_t outputTokens(std::optional<int64_t> numOutTokens, int64_t slots) {
  const int64_t requested = numOutTokens.value_or(0);
  return std::clamp<int64_t>(requested > 0 ? std::min(requested, slots) : slots + requested, 0, slots);
}

std::tuple<Tensor, Tensor> permuteHost(const Tensor& tokens, const Tensor& indices, std::optional<int64_t> numOutTokens,
                                       bool paddedMode) {
  checkTokens(tokens, indices);
  if (paddedMode) {
    // Capacity layout: indices [E, capacity] list the token ids per expert.
    // A fresh map (never a view of the caller's indices).
    return {tokens.index_select(0, indices.reshape(-1).to(at::kLong)), indices.to(at::kInt, false, true)};
  }
  const int64_t topK = indices.dim() == 2 ? indices.size(1) : 1;
  const Tensor flat = indices.reshape(-1);
  const Tensor order = at::argsort(flat, /*stable=*/true, 0, false);
  const int64_t kept = outputTokens(numOutTokens, flat.numel());
  const Tensor permuted = tokens.index_select(0, order.slice(0, 0, kept).div(topK, "floor"));
  // The second output is the inverse of the sort: each slot's row in the permuted buffer.
  const Tensor rowIdMap = at::argsort(order, /*stable=*/true, 0, false).to(at::kInt);
  return {permuted, rowIdMap};
}

Tensor unpermuteHost(const Tensor& permuted, const Tensor& rowIdMap, const OptionalTensor& probs, bool paddedMode,
                     at::OptionalIntArrayRef restoreShape) {
  NPU_OPS_CHECK(permuted.dim() == 2, "The dims of input permuted_tokens should be 2 dimensional, but got ",
                permuted.dim(), "-dimensional.");
  if (probs.has_value()) {
    NPU_OPS_CHECK(probs->dim() == 2, "The dims of input probs should be 2 dimensional, but got ", probs->dim(),
                  "-dimensional.");
  }
  const int64_t hidden = permuted.size(1);
  if (paddedMode) {
    NPU_OPS_CHECK(restoreShape.has_value() && restoreShape->size() == 2,
                  "npu_moe_token_unpermute: padded_mode needs restore_shape [N, H]");
    Tensor weighted = permuted.to(at::kFloat);
    if (probs.has_value()) weighted = weighted * probs->reshape({-1, 1}).to(at::kFloat);
    const Tensor index = rowIdMap.reshape(-1).to(at::kLong).unsqueeze(1).expand({-1, hidden});
    return at::zeros(*restoreShape, permuted.options().dtype(at::kFloat)).scatter_add(0, index, weighted)
        .to(permuted.scalar_type());
  }
  const int64_t topK = probs.has_value() ? probs->size(1) : 1;
  const int64_t tokens = rowIdMap.numel() / topK;
  const Tensor rows = rowIdMap.reshape(-1).to(at::kLong);
  const int64_t available = permuted.size(0);
  // Slots dropped by num_out_tokens point past the buffer and contribute nothing.
  const Tensor valid = rows.lt(available);
  const Tensor gathered =
      permuted.index_select(0, rows.clamp(0, std::max<int64_t>(available - 1, 0))).to(at::kFloat) *
      valid.unsqueeze(1).to(at::kFloat);
  Tensor weighted = gathered.view({tokens, topK, hidden});
  if (probs.has_value()) weighted = weighted * probs->to(at::kFloat).unsqueeze(-1);
  return weighted.sum(1).to(permuted.scalar_type());
}

std::tuple<Tensor, Tensor> permuteNpu(const Tensor& tokens, const Tensor& indices, std::optional<int64_t> numOutTokens,
                                      bool paddedMode) {
  requireChip("npu_moe_token_permute", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&tokens, &indices});
  const int device = tokens.device().index();
  auto [permuted, rowIdMap] = permuteHost(hostOperand(tokens), hostOperand(indices), numOutTokens, paddedMode);
  perf::FusedKernelWork work = streamingWork({&tokens, &indices}, {&permuted, &rowIdMap}, double(permuted.numel()),
                                             perf::calibration::kOpsIndexing);
  // The sort of the expert ids runs inside the kernel.
  work.vectorElements += double(indices.numel()) * std::log2(std::max<double>(2.0, double(indices.numel())));
  chargeFusedKernel(device, "npu::npu_moe_token_permute", perf::OperatorKind::kIndexing, work);
  return {deviceResult(permuted, device), deviceResult(rowIdMap, device)};
}

Tensor unpermuteNpu(const Tensor& permuted, const Tensor& rowIdMap, const OptionalTensor& probs, bool paddedMode,
                    at::OptionalIntArrayRef restoreShape) {
  requireChip("npu_moe_token_unpermute", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&permuted, &rowIdMap});
  requireNpuTensor(probs);
  const int device = permuted.device().index();
  const Tensor out = unpermuteHost(hostOperand(permuted), hostOperand(rowIdMap), hostOperand(probs), paddedMode,
                                   restoreShape);
  perf::FusedKernelWork work = streamingWork({&permuted, &rowIdMap}, {&out}, double(permuted.numel()),
                                             perf::calibration::kOpsIndexing);
  work.hbmBytes += bytesOf(probs);
  chargeFusedKernel(device, "npu::npu_moe_token_unpermute", perf::OperatorKind::kIndexing, work);
  return deviceResult(out, device);
}

// Gradients of the pair, from device operators (index_add / index_select run as aten kernels).
Tensor invertRowIdMap(const Tensor& rowIdMap) {
  const Tensor rows = rowIdMap.to(at::kLong);
  return at::empty_like(rows).scatter_(0, rows, at::arange(rows.numel(), rows.options()));
}

class PermuteFunction : public torch::autograd::Function<PermuteFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& tokens,
                                                const Tensor& indices, std::optional<int64_t> numOutTokens,
                                                bool paddedMode) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_moe_token_permute", "")
                         .typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, std::optional<int64_t>, bool)>();
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [permuted, rowIdMap] = op.call(tokens, indices, numOutTokens, paddedMode);
    ctx->save_for_backward({rowIdMap, indices});
    ctx->saved_data["tokens"] = tokens.size(0);
    ctx->saved_data["padded"] = paddedMode;
    ctx->mark_non_differentiable({rowIdMap});
    return {permuted, rowIdMap};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& grad = grads[0];
    const int64_t tokens = ctx->saved_data["tokens"].toInt();
    Tensor source;
    if (ctx->saved_data["padded"].toBool()) {
      source = saved[1].reshape(-1).to(at::kLong);
    } else {
      const int64_t topK = saved[1].dim() == 2 ? saved[1].size(1) : 1;
      source = invertRowIdMap(saved[0]).slice(0, 0, grad.size(0)).div(topK, "floor");
    }
    // The K copies of a token sum into its gradient.
    const Tensor dTokens = at::zeros({tokens, grad.size(1)}, grad.options()).index_add(0, source, grad);
    return {dTokens, Tensor(), Tensor(), Tensor()};
  }
};

class UnpermuteFunction : public torch::autograd::Function<UnpermuteFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& permuted, const Tensor& rowIdMap,
                        const OptionalTensor& probs, bool paddedMode, std::optional<std::vector<int64_t>> restore) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_moe_token_unpermute", "")
                         .typed<Tensor(const Tensor&, const Tensor&, const OptionalTensor&, bool,
                                       at::OptionalIntArrayRef)>();
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({permuted, rowIdMap, probs.value_or(Tensor())});
    ctx->saved_data["padded"] = paddedMode;
    at::OptionalIntArrayRef restoreView;
    if (restore.has_value()) restoreView = at::IntArrayRef(*restore);
    return op.call(permuted, rowIdMap, probs, paddedMode, restoreView);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& permuted = saved[0];
    const Tensor rows = saved[1].reshape(-1).to(at::kLong);
    const Tensor& probs = saved[2];
    const Tensor g = grads[0];
    const int64_t hidden = permuted.size(1);
    if (ctx->saved_data["padded"].toBool()) {
      const Tensor gathered = g.index_select(0, rows);  // [E*capacity, H]
      Tensor dPermuted = probs.defined() ? gathered * probs.reshape({-1, 1}).to(g.scalar_type()) : gathered;
      Tensor dProbs;
      if (probs.defined()) dProbs = (gathered.to(at::kFloat) * permuted.to(at::kFloat)).sum(1).reshape(probs.sizes()).to(probs.scalar_type());
      return {dPermuted, Tensor(), dProbs, Tensor(), Tensor()};
    }
    const int64_t topK = probs.defined() ? probs.size(1) : 1;
    const int64_t available = permuted.size(0);
    const Tensor valid = rows.lt(available);
    const Tensor safeRows = rows.clamp(0, std::max<int64_t>(available - 1, 0));
    // Slot t*K+k received g[t] * probs[t, k] from permuted[rows[t*K+k]].
    Tensor slotGrad = g.repeat_interleave(topK, 0);
    if (probs.defined()) slotGrad = slotGrad * probs.reshape({-1, 1}).to(g.scalar_type());
    slotGrad = slotGrad * valid.unsqueeze(1).to(g.scalar_type());
    const Tensor dPermuted = at::zeros_like(permuted).index_add(0, safeRows, slotGrad);
    Tensor dProbs;
    if (probs.defined()) {
      const Tensor gathered = permuted.index_select(0, safeRows).to(at::kFloat) * valid.unsqueeze(1).to(at::kFloat);
      dProbs = (gathered.view({-1, topK, hidden}) * g.to(at::kFloat).unsqueeze(1)).sum(-1).to(probs.scalar_type());
    }
    return {dPermuted, Tensor(), dProbs, Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor> permuteAutograd(const Tensor& tokens, const Tensor& indices,
                                           std::optional<int64_t> numOutTokens, bool paddedMode) {
  auto outputs = PermuteFunction::apply(tokens, indices, numOutTokens, paddedMode);
  return {outputs[0], outputs[1]};
}

Tensor unpermuteAutograd(const Tensor& permuted, const Tensor& rowIdMap, const OptionalTensor& probs,
                         bool paddedMode, at::OptionalIntArrayRef restoreShape) {
  std::optional<std::vector<int64_t>> restore;
  if (restoreShape.has_value()) restore = restoreShape->vec();
  return UnpermuteFunction::apply(permuted, rowIdMap, probs, paddedMode, restore);
}

// ------------------------------------------------------------ inference routing

std::tuple<Tensor, Tensor, Tensor> gatingTopKSoftmaxHost(const Tensor& x, const OptionalTensor& finished, int64_t k) {
  NPU_OPS_CHECK(x.dim() == 2 || x.dim() == 3, "npu_moe_gating_top_k_softmax: x must be 2 or 3 dimensional, but got ",
                x.dim(), "-dimensional");
  NPU_OPS_CHECK(k >= 1 && k <= x.size(-1), "npu_moe_gating_top_k_softmax: k must be in [1, ", x.size(-1),
                "], but got ", k);
  TORCH_CHECK(!finished.has_value(), "npu_moe_gating_top_k_softmax: finished is not supported by npusim.",
              notSupported());
  const Tensor probs = at::softmax(x.to(at::kFloat), -1);
  auto [values, experts] = probs.topk(k, -1);
  const int64_t rows = x.numel() / x.size(-1);
  auto rowIdx = at::arange(rows * k, x.options().dtype(at::kInt)).reshape({k, rows}).t().contiguous();
  auto leading = x.sizes().vec();
  leading.back() = k;
  return {values.to(x.scalar_type()), experts.to(at::kInt), rowIdx.reshape(leading)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> initRoutingHost(const Tensor& x, const Tensor& expertIdx,
                                                           const OptionalTensor& scale, const OptionalTensor& offset,
                                                           int64_t activeNum, int64_t expertCapacity,
                                                           int64_t expertNum, int64_t dropPadMode,
                                                           int64_t expertTokensNumType, bool expertTokensNumFlag,
                                                           int64_t quantMode, at::IntArrayRef activeExpertRange,
                                                           int64_t rowIdxType, std::optional<int64_t> xDtype) {
  NPU_OPS_CHECK(x.dim() == 2 && expertIdx.dim() == 2 && x.size(0) == expertIdx.size(0),
                "npu_moe_init_routing_v2: x must be [N, H] and expert_idx [N, K], but got ", x.sizes(), " and ",
                expertIdx.sizes());
  TORCH_CHECK(quantMode == -1 && dropPadMode == 0 && !scale.has_value() && !offset.has_value(),
              "npu_moe_init_routing_v2: npusim supports the dropless, unquantised path only (quant_mode=-1, "
              "drop_pad_mode=0, no scale/offset).",
              notSupported());
  TORCH_CHECK(activeExpertRange.empty() || (activeExpertRange.size() == 2 && activeExpertRange[0] == 0 &&
                                            expertNum > 0 && activeExpertRange[1] == expertNum),
              "npu_moe_init_routing_v2: an active_expert_range narrower than all experts is not supported by npusim.",
              notSupported());
  NPU_OPS_CHECK_VALUE(rowIdxType == 0 || rowIdxType == 1, "npu_moe_init_routing_v2: row_idx_type must be 0 or 1, "
                      "but got ", rowIdxType);
  NPU_OPS_CHECK_VALUE(expertTokensNumType == 0 || expertTokensNumType == 1,
                      "npu_moe_init_routing_v2: npusim supports expert_tokens_num_type 0 (cumsum) and 1 (count), "
                      "but got ", expertTokensNumType);
  const int64_t topK = expertIdx.size(1);
  const Tensor flat = expertIdx.reshape(-1);
  const Tensor sortedRow = at::argsort(flat, /*stable=*/true, 0, false);
  const int64_t slots = flat.numel();
  const int64_t kept = activeNum > 0 ? std::min(activeNum, slots) : slots;
  const Tensor expanded = x.index_select(0, sortedRow.slice(0, 0, kept).div(topK, "floor"));
  const Tensor rowIdx = rowIdxType == 0 ? at::argsort(sortedRow, true, 0, false).to(at::kInt) : sortedRow.to(at::kInt);
  Tensor tokens;
  if (expertTokensNumFlag) {
    NPU_OPS_CHECK(expertNum > 0, "npu_moe_init_routing_v2: expert_tokens_num_flag needs expert_num > 0");
    const Tensor counts = at::zeros({expertNum}, x.options().dtype(at::kLong))
                              .scatter_add(0, flat.to(at::kLong), at::ones({slots}, x.options().dtype(at::kLong)));
    tokens = expertTokensNumType == 0 ? counts.cumsum(0) : counts;
  } else {
    tokens = at::empty({0}, x.options().dtype(at::kLong));
  }
  return {expanded, rowIdx, tokens, at::empty({0}, x.options().dtype(at::kFloat))};
}

Tensor finalizeRoutingHost(const Tensor& rows, const OptionalTensor& skip1, const OptionalTensor& skip2,
                           const OptionalTensor& bias, const OptionalTensor& scales, const Tensor& srcToDst,
                           const OptionalTensor& expertForSourceRow, std::optional<int64_t> dropPadMode,
                           std::optional<int64_t> k) {
  TORCH_CHECK(dropPadMode.value_or(0) == 0, "npu_moe_finalize_routing: drop_pad_mode != 0 is not supported by npusim.",
              notSupported());
  const int64_t topK = k.value_or(1);
  NPU_OPS_CHECK(topK >= 1 && srcToDst.numel() % topK == 0, "npu_moe_finalize_routing: k (", topK,
                ") must divide expanded_src_to_dst_row (", srcToDst.numel(), ")");
  const int64_t tokens = srcToDst.numel() / topK;
  // Slot i + k*N of the map is token i's k-th choice.
  const Tensor index = srcToDst.reshape({topK, tokens}).t().reshape(-1).to(at::kLong);
  Tensor gathered = rows.index_select(0, index).to(at::kFloat).view({tokens, topK, rows.size(1)});
  if (bias.has_value()) {
    NPU_OPS_CHECK(expertForSourceRow.has_value(), "npu_moe_finalize_routing: bias needs export_for_source_row");
    gathered = gathered + bias->index_select(0, expertForSourceRow->reshape(-1).to(at::kLong))
                              .to(at::kFloat)
                              .view({tokens, topK, rows.size(1)});
  }
  if (scales.has_value()) gathered = gathered * scales->to(at::kFloat).view({tokens, topK, 1});
  Tensor out = gathered.sum(1);
  if (skip1.has_value()) out = out + skip1->to(at::kFloat);
  if (skip2.has_value()) out = out + skip2->to(at::kFloat);
  return out.to(rows.scalar_type());
}

std::tuple<Tensor, Tensor, Tensor> gatingTopKSoftmaxNpu(const Tensor& x, const OptionalTensor& finished, int64_t k) {
  requireChip("npu_moe_gating_top_k_softmax", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&x});
  const int device = x.device().index();
  auto [y, experts, rowIdx] = gatingTopKSoftmaxHost(hostOperand(x), hostOperand(finished), k);
  chargeFusedKernel(device, "npu::npu_moe_gating_top_k_softmax", perf::OperatorKind::kSoftmax,
                    streamingWork({&x}, {&y, &experts, &rowIdx}, double(x.numel()),
                                  perf::calibration::kOpsSoftmax + double(k)));
  return {deviceResult(y, device), deviceResult(experts, device), deviceResult(rowIdx, device)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> initRoutingNpu(const Tensor& x, const Tensor& expertIdx,
                                                          const OptionalTensor& scale, const OptionalTensor& offset,
                                                          int64_t activeNum, int64_t expertCapacity, int64_t expertNum,
                                                          int64_t dropPadMode, int64_t expertTokensNumType,
                                                          bool expertTokensNumFlag, int64_t quantMode,
                                                          at::IntArrayRef activeExpertRange, int64_t rowIdxType,
                                                          std::optional<int64_t> xDtype) {
  requireChip("npu_moe_init_routing_v2", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend310P});
  requireNpuTensors({&x, &expertIdx});
  const int device = x.device().index();
  auto [expanded, rowIdx, tokens, expandedScale] =
      initRoutingHost(hostOperand(x), hostOperand(expertIdx), hostOperand(scale), hostOperand(offset), activeNum,
                      expertCapacity, expertNum, dropPadMode, expertTokensNumType, expertTokensNumFlag, quantMode,
                      activeExpertRange, rowIdxType, xDtype);
  perf::FusedKernelWork work = streamingWork({&x, &expertIdx}, {&expanded, &rowIdx, &tokens},
                                             double(expanded.numel()), perf::calibration::kOpsIndexing);
  work.vectorElements += double(expertIdx.numel()) * std::log2(std::max<double>(2.0, double(expertIdx.numel())));
  chargeFusedKernel(device, "npu::npu_moe_init_routing_v2", perf::OperatorKind::kIndexing, work);
  return {deviceResult(expanded, device), deviceResult(rowIdx, device), deviceResult(tokens, device),
          deviceResult(expandedScale, device)};
}

Tensor finalizeRoutingNpu(const Tensor& rows, const OptionalTensor& skip1, const OptionalTensor& skip2,
                          const OptionalTensor& bias, const OptionalTensor& scales, const Tensor& srcToDst,
                          const OptionalTensor& expertForSourceRow, std::optional<int64_t> dropPadMode,
                          std::optional<int64_t> k) {
  requireChip("npu_moe_finalize_routing", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&rows, &srcToDst});
  const int device = rows.device().index();
  const Tensor out = finalizeRoutingHost(hostOperand(rows), hostOperand(skip1), hostOperand(skip2), hostOperand(bias),
                                         hostOperand(scales), hostOperand(srcToDst), hostOperand(expertForSourceRow),
                                         dropPadMode, k);
  perf::FusedKernelWork work =
      streamingWork({&rows, &srcToDst}, {&out}, double(rows.numel()), perf::calibration::kOpsIndexing);
  work.hbmBytes += bytesOf(skip1) + bytesOf(skip2) + bytesOf(scales) + bytesOf(bias);
  chargeFusedKernel(device, "npu::npu_moe_finalize_routing", perf::OperatorKind::kIndexing, work);
  return deviceResult(out, device);
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_grouped_matmul", TORCH_FN(groupedMatmulNpu));
  m.impl("npu_moe_token_permute", TORCH_FN(permuteNpu));
  m.impl("npu_moe_token_unpermute", TORCH_FN(unpermuteNpu));
  m.impl("npu_moe_gating_top_k_softmax", TORCH_FN(gatingTopKSoftmaxNpu));
  m.impl("npu_moe_init_routing_v2", TORCH_FN(initRoutingNpu));
  m.impl("npu_moe_finalize_routing", TORCH_FN(finalizeRoutingNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_grouped_matmul", TORCH_FN(groupedMatmulMeta));
  m.impl("npu_moe_token_permute", TORCH_FN(permuteHost));
  m.impl("npu_moe_token_unpermute", TORCH_FN(unpermuteHost));
  m.impl("npu_moe_gating_top_k_softmax", TORCH_FN(gatingTopKSoftmaxHost));
  m.impl("npu_moe_init_routing_v2", TORCH_FN(initRoutingHost));
  m.impl("npu_moe_finalize_routing", TORCH_FN(finalizeRoutingHost));
}

TORCH_LIBRARY_IMPL(npu, Autograd, m) {
  m.impl("npu_moe_token_permute", TORCH_FN(permuteAutograd));
  m.impl("npu_moe_token_unpermute", TORCH_FN(unpermuteAutograd));
}

}  // namespace npusim::ops
