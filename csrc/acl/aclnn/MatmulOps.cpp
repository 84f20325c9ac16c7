// The matrix products: Mm (2-D), BatchMatMul (3-D) and Matmul (1-D to 6-D, torch.matmul's
// broadcasting). cubeMathType chooses the Cube's precision for the call, as torch_npu derives it
// from torch.npu.matmul.allow_hf32: 0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION and 3 USE_HF32
// (fp32 in HF32 on Atlas A2/A3), 2 USE_FP16 (fp32 operands cast to fp16 first), 4 USE_FP32_ADD.
// Operands of another type than the computation's are cast into the workspace first, and a
// result of another type than out's is cast from the workspace into out: the Cast kernels the
// real operator launches, priced as such.
#include <ATen/ATen.h>

#include "acl/aclnn/DataTypes.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorChecks.h"
#include "aclnnop/aclnn_batch_matmul.h"
#include "aclnnop/aclnn_matmul.h"
#include "aclnnop/aclnn_mm.h"
#include "ops/KernelSupport.h"

namespace npusim::aclnn {
namespace {

enum class Product { kMm, kBatchMatMul, kMatmul };

constexpr int8_t kKeepDtype = 0;
constexpr int8_t kAllowFp32DownPrecision = 1;
constexpr int8_t kUseFp16 = 2;
constexpr int8_t kUseHf32 = 3;
constexpr int8_t kUseFp32Add = 4;

at::Tensor product(Product kind, const at::Tensor& a, const at::Tensor& b) {
  switch (kind) {
    case Product::kMm: return at::mm(a, b);
    case Product::kBatchMatMul: return at::bmm(a, b);
    case Product::kMatmul: return at::matmul(a, b);
  }
  return {};
}

void productOut(Product kind, at::Tensor out, const at::Tensor& a, const at::Tensor& b) {
  switch (kind) {
    case Product::kMm: at::mm_out(out, a, b); return;
    case Product::kBatchMatMul: at::bmm_out(out, a, b); return;
    case Product::kMatmul: at::matmul_out(out, a, b); return;
  }
}

std::vector<int64_t> sizesOf(const aclTensor& t) { return t.viewDims; }

void describeProduct(OperatorPlan& plan, Product kind, const aclTensor* selfArg, const aclTensor* mat2Arg,
                     const aclTensor* outArg, int8_t cubeMathType) {
  const aclTensor& self = requireTensor(selfArg, "self");
  const aclTensor& mat2 = requireTensor(mat2Arg, "mat2");
  const aclTensor& out = requireTensor(outArg, "out");
  const c10::ScalarType selfType = requireType(self, "self", kFloatingTypes);
  const c10::ScalarType mat2Type = requireType(mat2, "mat2", kFloatingTypes);
  const c10::ScalarType outType = requireType(out, "out", kFloatingTypes);
  const size_t least = kind == Product::kMatmul ? 1 : kind == Product::kMm ? 2 : 3;
  const size_t most = kind == Product::kMatmul ? 6 : least;
  requireDims(self, "self", least, most);
  requireDims(mat2, "mat2", least, most);
  requireDims(out, "out", kind == Product::kMatmul ? 0 : least, most);
  requireValid(cubeMathType >= kKeepDtype && cubeMathType <= kUseFp32Add,
               "cubeMathType should be 0 (KEEP_DTYPE), 1 (ALLOW_FP32_DOWN_PRECISION), 2 (USE_FP16), 3 (USE_HF32) "
               "or 4 (USE_FP32_ADD), but got " + std::to_string(cubeMathType));
  const c10::ScalarType promoted = c10::promoteTypes(selfType, mat2Type);
  const ops::ChipFamily family = ops::chipFamily();
  const bool atlasTraining = family == ops::ChipFamily::kAscend910A || family == ops::ChipFamily::kAscend310P;
  // The chips' documented limits on cubeMathType.
  requireValid(!(cubeMathType == kUseFp16 && promoted == c10::kBFloat16),
               "cubeMathType 2 (USE_FP16) does not support DT_BF16 inputs");
  if (kind != Product::kBatchMatMul || atlasTraining) {
    requireValid(!(cubeMathType == kUseHf32 && promoted != c10::kFloat),
                 "cubeMathType 3 (USE_HF32) supports DT_FLOAT inputs only, but the inputs are " + typeName(promoted));
  }
  if (atlasTraining) {
    requireValid(cubeMathType != kUseHf32, "cubeMathType 3 (USE_HF32) is not supported on the chosen chip");
    requireValid(!(cubeMathType == kKeepDtype && promoted == c10::kFloat),
                 "the chosen chip has no fp32 Cube: cubeMathType 0 (KEEP_DTYPE) does not support DT_FLOAT inputs");
  }
  // The type the Cube multiplies in, and whether fp32 goes through HF32.
  c10::ScalarType compute = promoted;
  if (promoted == c10::kFloat &&
      (cubeMathType == kUseFp16 || (atlasTraining && cubeMathType == kAllowFp32DownPrecision))) {
    compute = c10::kHalf;
  }
  const bool hf32 = !atlasTraining && compute == c10::kFloat &&
                    (cubeMathType == kAllowFp32DownPrecision || cubeMathType == kUseHf32);

  const at::TensorOptions meta = at::TensorOptions().dtype(compute).device(c10::kMeta);
  const at::Tensor inferred = inferOrRefuse(ACLNN_ERR_PARAM_INVALID, [&] {
    return product(kind, at::empty(self.viewDims, meta), at::empty(mat2.viewDims, meta));
  });
  requireShape(out, "out", std::vector<int64_t>(inferred.sizes().begin(), inferred.sizes().end()));

  const size_t selfSlot = plan.input(selfArg, "self");
  const size_t mat2Slot = plan.input(mat2Arg, "mat2");
  const size_t outSlot = plan.output(outArg, "out");
  const std::optional<size_t> selfCast =
      selfType != compute ? std::optional<size_t>(plan.workspace(sizesOf(self), compute)) : std::nullopt;
  const std::optional<size_t> mat2Cast =
      mat2Type != compute ? std::optional<size_t>(plan.workspace(sizesOf(mat2), compute)) : std::nullopt;
  const std::optional<size_t> result =
      outType != compute ? std::optional<size_t>(plan.workspace(sizesOf(out), compute)) : std::nullopt;
  plan.matmulHf32(hf32);
  plan.launch([=](const LaunchTensors& t) {
    auto operand = [&](size_t slot, const std::optional<size_t>& cast) {
      if (!cast) return t[slot];
      at::Tensor converted = t.workspace(*cast);
      converted.copy_(t[slot]);
      return converted;
    };
    const at::Tensor a = operand(selfSlot, selfCast);
    const at::Tensor b = operand(mat2Slot, mat2Cast);
    at::Tensor target = result ? t.workspace(*result) : t[outSlot];
    productOut(kind, target, a, b);
    if (result) {
      at::Tensor out = t[outSlot];
      out.copy_(target);
    }
  });
}

}  // namespace
}  // namespace npusim::aclnn

using npusim::aclnn::OperatorPlan;
using npusim::aclnn::Product;

extern "C" {

aclnnStatus aclnnMmGetWorkspaceSize(const aclTensor* self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType,
                                    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnMm", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeProduct(plan, Product::kMm, self, mat2, out, cubeMathType);
  });
}
aclnnStatus aclnnMm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnMm", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnBatchMatMulGetWorkspaceSize(const aclTensor* self, const aclTensor* mat2, aclTensor* out,
                                             int8_t cubeMathType, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnBatchMatMul", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeProduct(plan, Product::kBatchMatMul, self, mat2, out, cubeMathType);
  });
}
aclnnStatus aclnnBatchMatMul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnBatchMatMul", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor* self, const aclTensor* mat2, aclTensor* out,
                                        int8_t cubeMathType, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnMatmul", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeProduct(plan, Product::kMatmul, self, mat2, out, cubeMathType);
  });
}
aclnnStatus aclnnMatmul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnMatmul", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
