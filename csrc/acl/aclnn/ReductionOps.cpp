// The reductions: ReduceSum (torch.sum(self, dims, keepdim, dtype=...)), Mean (torch.mean) and
// ArgMax (torch.argmax), each the aten out= kernel of the PyTorch path. A Mean whose out has
// another type than dtype, or an ArgMax into INT32, computes into the workspace first and casts
// into out, as the real operators do.
#include <ATen/ATen.h>

#include "acl/aclnn/DataTypes.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorChecks.h"
#include "aclnnop/aclnn_argmax.h"
#include "aclnnop/aclnn_mean.h"
#include "aclnnop/aclnn_reduce_sum.h"

namespace npusim::aclnn {
namespace {

constexpr size_t kMostDims = 8;

std::vector<int64_t> sizesOf(const at::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

const TypeList kSumTypes = {c10::kHalf, c10::kFloat, c10::kChar,   c10::kShort,        c10::kInt,           c10::kLong,
                            c10::kByte, c10::kBool,  c10::kDouble, c10::kComplexFloat, c10::kComplexDouble, c10::kBFloat16};
const TypeList kMeanTypes = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kDouble,       c10::kInt,          c10::kLong,
                             c10::kShort, c10::kChar, c10::kByte,     c10::kComplexFloat, c10::kComplexDouble};
const TypeList kArgMaxTypes = {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kDouble, c10::kChar,
                               c10::kShort, c10::kInt,  c10::kLong,     c10::kByte};

void describeReduceSum(OperatorPlan& plan, const aclTensor* selfArg, const aclIntArray* dimsArg, bool keepDims,
                       int32_t dtype, const aclTensor* outArg) {
  const aclTensor& self = requireTensor(selfArg, "self");
  const aclTensor& out = requireTensor(outArg, "out");
  requireType(self, "self", kSumTypes);
  requireType(out, "out", kSumTypes);
  const c10::ScalarType type = requireDataType(dtype, "dtype", kSumTypes);
  requireValid(out.dataType == dtype, "dtype " + dataTypeName(dtype) + " and out's dtype " +
                                          dataTypeName(out.dataType) + " should be the same");
  requireDims(self, "self", 0, kMostDims);
  requireDims(out, "out", 0, kMostDims);
  const std::vector<int64_t> dims = requireDimList(dimsArg, "dims", static_cast<int64_t>(self.viewDims.size()));
  const at::Tensor inferred =
      inferOrRefuse(ACLNN_ERR_PARAM_INVALID, [&] { return at::sum(metaTensor(self), dims, keepDims, type); });
  requireShape(out, "out", sizesOf(inferred));
  const size_t selfSlot = plan.input(selfArg, "self");
  const size_t outSlot = plan.output(outArg, "out");
  plan.launch([=](const LaunchTensors& t) {
    at::Tensor result = t[outSlot];
    at::sum_out(result, t[selfSlot], dims, keepDims, type);
  });
}

void describeMean(OperatorPlan& plan, const aclTensor* selfArg, const aclIntArray* dimArg, bool keepDim,
                  int32_t dtype, const aclTensor* outArg) {
  const aclTensor& self = requireTensor(selfArg, "self");
  const aclTensor& out = requireTensor(outArg, "out");
  const c10::ScalarType selfType = requireType(self, "self", kMeanTypes);
  const c10::ScalarType outType = requireType(out, "out", kMeanTypes);
  const c10::ScalarType type = requireDataType(dtype, "dtype", kMeanTypes);
  // torch.mean divides in the result type: an integer dtype has no mean on the PyTorch path.
  requireValid(c10::isFloatingType(type) || c10::isComplexType(type),
               "dtype " + dataTypeName(dtype) + ": npusim computes Mean in a floating or complex dtype, as torch.mean");
  requireValid(c10::canCast(selfType, type), "self's dtype " + typeName(selfType) + " cannot be cast to dtype " +
                                                 dataTypeName(dtype));
  requireValid(c10::canCast(type, outType), "dtype " + dataTypeName(dtype) + " cannot be cast to out's dtype " +
                                                typeName(outType));
  requireDims(self, "self", 0, kMostDims);
  requireDims(out, "out", 0, kMostDims);
  const std::vector<int64_t> dims = requireDimList(dimArg, "dim", static_cast<int64_t>(self.viewDims.size()));
  const at::Tensor inferred =
      inferOrRefuse(ACLNN_ERR_PARAM_INVALID, [&] { return at::mean(metaTensor(self), dims, keepDim, type); });
  requireShape(out, "out", sizesOf(inferred));
  const size_t selfSlot = plan.input(selfArg, "self");
  const size_t outSlot = plan.output(outArg, "out");
  const std::optional<size_t> result =
      outType != type ? std::optional<size_t>(plan.workspace(sizesOf(inferred), type)) : std::nullopt;
  plan.launch([=](const LaunchTensors& t) {
    at::Tensor out = t[outSlot];
    at::Tensor target = result ? t.workspace(*result) : out;
    at::mean_out(target, t[selfSlot], dims, keepDim, type);
    if (result) out.copy_(target);
  });
}

void describeArgMax(OperatorPlan& plan, const aclTensor* selfArg, int64_t dim, bool keepdim, const aclTensor* outArg) {
  const aclTensor& self = requireTensor(selfArg, "self");
  const aclTensor& out = requireTensor(outArg, "out");
  requireType(self, "self", kArgMaxTypes);
  const c10::ScalarType outType = requireType(out, "out", {c10::kInt, c10::kLong});
  requireDims(self, "self", 0, kMostDims);
  requireDims(out, "out", 0, kMostDims);
  const int64_t axis = normaliseDim(dim, static_cast<int64_t>(self.viewDims.size()), "dim");
  const at::Tensor inferred =
      inferOrRefuse(ACLNN_ERR_PARAM_INVALID, [&] { return at::argmax(metaTensor(self), axis, keepdim); });
  requireShape(out, "out", sizesOf(inferred));
  const size_t selfSlot = plan.input(selfArg, "self");
  const size_t outSlot = plan.output(outArg, "out");
  const std::optional<size_t> indices =
      outType != c10::kLong ? std::optional<size_t>(plan.workspace(sizesOf(inferred), c10::kLong)) : std::nullopt;
  plan.launch([=](const LaunchTensors& t) {
    at::Tensor out = t[outSlot];
    at::Tensor target = indices ? t.workspace(*indices) : out;
    at::argmax_out(target, t[selfSlot], axis, keepdim);
    if (indices) out.copy_(target);
  });
}

}  // namespace
}  // namespace npusim::aclnn

using npusim::aclnn::enumBits;
using npusim::aclnn::OperatorPlan;

extern "C" {

aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor* self, const aclIntArray* dims, bool keepDims,
                                           aclDataType dtype, aclTensor* out, uint64_t* workspaceSize,
                                           aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnReduceSum", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeReduceSum(plan, self, dims, keepDims, enumBits(dtype), out);
  });
}
aclnnStatus aclnnReduceSum(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnReduceSum", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMeanGetWorkspaceSize(const aclTensor* self, const aclIntArray* dim, bool keepDim, aclDataType dtype,
                                      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnMean", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeMean(plan, self, dim, keepDim, enumBits(dtype), out);
  });
}
aclnnStatus aclnnMean(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnMean", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnArgMaxGetWorkspaceSize(const aclTensor* self, int64_t dim, bool keepdim, aclTensor* out,
                                        uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnArgMax", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeArgMax(plan, self, dim, keepdim, out);
  });
}
aclnnStatus aclnnArgMax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnArgMax", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
