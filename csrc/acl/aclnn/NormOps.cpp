// Softmax, LayerNorm and RmsNorm. Softmax runs aten's _softmax out= kernel (torch.softmax);
// LayerNorm runs native_layer_norm (F.layer_norm) and RmsNorm torch_npu's npu_rms_norm fused
// kernel, whose results are placed in the program's outputs (statistics the program does not ask
// for are dropped, as the real kernels skip writing them).
#include <ATen/ATen.h>

#include "acl/aclnn/DataTypes.h"
#include "acl/aclnn/DeviceTensors.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorChecks.h"
#include "acl/aclnn/OperatorLaunch.h"
#include "aclnnop/aclnn_layer_norm.h"
#include "aclnnop/aclnn_rms_norm.h"
#include "aclnnop/aclnn_softmax.h"

namespace npusim::aclnn {
namespace {

constexpr size_t kMostDims = 8;

std::vector<int64_t> sizesOf(const at::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

void describeSoftmax(OperatorPlan& plan, const aclTensor* selfArg, int64_t dim, const aclTensor* outArg) {
  const TypeList types = {c10::kHalf, c10::kFloat, c10::kDouble, c10::kBFloat16};
  const aclTensor& self = requireTensor(selfArg, "self");
  const aclTensor& out = requireTensor(outArg, "out");
  requireType(self, "self", types);
  requireType(out, "out", types);
  requireDims(self, "self", 0, kMostDims);
  requireDims(out, "out", 0, kMostDims);
  const int64_t axis = normaliseDim(dim, static_cast<int64_t>(self.viewDims.size()), "dim");
  requireSameShape(self, "self", out, "out");
  requireSameType(self, "self", out, "out");
  const size_t selfSlot = plan.input(selfArg, "self");
  const size_t outSlot = plan.output(outArg, "out");
  plan.launch([=](const LaunchTensors& t) {
    at::Tensor result = t[outSlot];
    at::_softmax_out(result, t[selfSlot], axis, false);
  });
}

void describeLayerNorm(OperatorPlan& plan, const aclTensor* inputArg, const aclIntArray* normalizedShape,
                       const aclTensor* weightArg, const aclTensor* biasArg, double eps, const aclTensor* outArg,
                       const aclTensor* meanArg, const aclTensor* rstdArg) {
  const aclTensor& input = requireTensor(inputArg, "input");
  requireArgument(normalizedShape, "normalizedShape");
  requireLive(normalizedShape, "normalizedShape");
  const aclTensor& out = requireTensor(outArg, "out");
  const c10::ScalarType type = requireType(input, "input", kFloatingTypes);
  requireType(out, "out", kFloatingTypes);
  requireDims(input, "input", 1, kMostDims);
  requireDims(out, "out", 1, kMostDims);
  const std::vector<int64_t>& normalized = normalizedShape->values;
  requireValid(!normalized.empty() && normalized.size() <= kMostDims,
               "normalizedShape should have 1 to 8 dimensions, but got " + std::to_string(normalized.size()));
  requireValid(normalized.size() <= input.viewDims.size(),
               "normalizedShape " + shapeText(normalized) + " has more dimensions than input " +
                   shapeText(input.viewDims));
  const size_t leading = input.viewDims.size() - normalized.size();
  requireValid(std::equal(normalized.begin(), normalized.end(), input.viewDims.begin() + leading),
               "input's shape " + shapeText(input.viewDims) + " does not end with normalizedShape " +
                   shapeText(normalized));
  requireSameShape(input, "input", out, "out");
  requireSameType(input, "input", out, "out");
  std::optional<c10::ScalarType> parameterType;
  for (auto [tensor, name] : {std::pair{weightArg, "weightOptional"}, std::pair{biasArg, "biasOptional"}}) {
    if (tensor == nullptr) continue;
    requireLive(tensor, name);
    const c10::ScalarType t = requireType(*tensor, name, kFloatingTypes);
    requireValid(t == type || t == c10::kFloat, std::string(name) + "'s dtype should be input's or DT_FLOAT, but got " +
                                                    typeName(t));
    requireValid(!parameterType || *parameterType == t, "weightOptional and biasOptional should have one dtype");
    parameterType = t;
    requireShape(*tensor, name, normalized);
  }
  std::vector<int64_t> statShape(input.viewDims.begin(), input.viewDims.begin() + leading);
  statShape.resize(input.viewDims.size(), 1);
  for (auto [tensor, name] : {std::pair{meanArg, "meanOutOptional"}, std::pair{rstdArg, "rstdOutOptional"}}) {
    if (tensor == nullptr) continue;
    requireLive(tensor, name);
    requireType(*tensor, name, kFloatingTypes);
    requireValid(tensor->dataType == input.dataType, std::string(name) + "'s dtype should be input's " +
                                                         dataTypeName(input.dataType));
    requireShape(*tensor, name, statShape);
  }
  const size_t inputSlot = plan.input(inputArg, "input");
  const size_t weightSlot = plan.input(weightArg, "weightOptional");
  const size_t biasSlot = plan.input(biasArg, "biasOptional");
  const size_t outSlot = plan.output(outArg, "out");
  const size_t meanSlot = plan.output(meanArg, "meanOutOptional");
  const size_t rstdSlot = plan.output(rstdArg, "rstdOutOptional");
  const std::vector<int64_t> shape = normalized;
  plan.launch([=](const LaunchTensors& t) {
    auto optional = [&](size_t slot) { return t[slot].defined() ? std::optional<at::Tensor>(t[slot]) : std::nullopt; };
    const auto [y, mean, rstd] = at::native_layer_norm(t[inputSlot], shape, optional(weightSlot), optional(biasSlot), eps);
    placeResult(y, t[outSlot]);
    placeResult(mean, t[meanSlot]);
    placeResult(rstd, t[rstdSlot]);
  });
}

// RmsNorm's shape errors are ACLNN_ERR_INNER_TILING_ERROR, as CANN documents them.
void describeRmsNorm(OperatorPlan& plan, const aclTensor* xArg, const aclTensor* gammaArg, double epsilon,
                     const aclTensor* yArg, const aclTensor* rstdArg) {
  const aclTensor& x = requireTensor(xArg, "x");
  const aclTensor& gamma = requireTensor(gammaArg, "gamma");
  const aclTensor& y = requireTensor(yArg, "yOut");
  const aclTensor& rstd = requireTensor(rstdArg, "rstdOut");
  requireType(x, "x", kFloatingTypes);
  requireType(gamma, "gamma", kFloatingTypes);
  requireType(y, "yOut", kFloatingTypes);
  requireType(rstd, "rstdOut", {c10::kFloat});
  requireValid(y.dataType == x.dataType, "yOut's dtype should be x's " + dataTypeName(x.dataType));
  requireDims(x, "x", 1, kMostDims);
  requireDims(gamma, "gamma", 1, kMostDims);
  requireDims(y, "yOut", 1, kMostDims);
  requireDims(rstd, "rstdOut", 1, kMostDims);
  const auto inferred = inferOrRefuse(ACLNN_ERR_INNER_TILING_ERROR, [&] {
    return callNpuOperator("npu::npu_rms_norm", {{"self", metaTensor(x)}, {"gamma", metaTensor(gamma)}, {"epsilon", epsilon}});
  });
  auto requireTiled = [](const aclTensor& tensor, const char* name, const at::Tensor& expected) {
    if (tensor.viewDims != sizesOf(expected)) {
      throw AclnnFailure(ACLNN_ERR_INNER_TILING_ERROR, std::string(name) + "'s shape should be " +
                                                           shapeText(sizesOf(expected)) + ", but got " +
                                                           shapeText(tensor.viewDims));
    }
  };
  requireTiled(y, "yOut", inferred.at(0).toTensor());
  requireTiled(rstd, "rstdOut", inferred.at(1).toTensor());
  const size_t xSlot = plan.input(xArg, "x");
  const size_t gammaSlot = plan.input(gammaArg, "gamma");
  const size_t ySlot = plan.output(yArg, "yOut");
  const size_t rstdSlot = plan.output(rstdArg, "rstdOut");
  plan.launch([=](const LaunchTensors& t) {
    const auto results =
        callNpuOperator("npu::npu_rms_norm", {{"self", t[xSlot]}, {"gamma", t[gammaSlot]}, {"epsilon", epsilon}});
    placeResult(results.at(0).toTensor(), t[ySlot]);
    placeResult(results.at(1).toTensor(), t[rstdSlot]);
  });
}

}  // namespace
}  // namespace npusim::aclnn

using npusim::aclnn::OperatorPlan;

extern "C" {

aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor* self, int64_t dim, aclTensor* out, uint64_t* workspaceSize,
                                         aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnSoftmax", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeSoftmax(plan, self, dim, out);
  });
}
aclnnStatus aclnnSoftmax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnSoftmax", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnLayerNormGetWorkspaceSize(const aclTensor* input, const aclIntArray* normalizedShape,
                                           const aclTensor* weightOptional, const aclTensor* biasOptional, double eps,
                                           aclTensor* out, aclTensor* meanOutOptional, aclTensor* rstdOutOptional,
                                           uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnLayerNorm", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeLayerNorm(plan, input, normalizedShape, weightOptional, biasOptional, eps, out,
                                     meanOutOptional, rstdOutOptional);
  });
}
aclnnStatus aclnnLayerNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnLayerNorm", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor* x, const aclTensor* gamma, double epsilon,
                                         const aclTensor* yOut, const aclTensor* rstdOut, uint64_t* workspaceSize,
                                         aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnRmsNorm", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeRmsNorm(plan, x, gamma, epsilon, yOut, rstdOut);
  });
}
aclnnStatus aclnnRmsNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnRmsNorm", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
