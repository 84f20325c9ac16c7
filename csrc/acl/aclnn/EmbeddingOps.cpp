// The embeddings: Embedding (F.embedding: rows of a 2-D weight, aten's index_select kernel) and
// RotaryPositionEmbedding (torch_npu's npu_rotary_mul fused kernel: mode 0 half, 1 interleave).
#include <ATen/ATen.h>

#include "acl/aclnn/DataTypes.h"
#include "acl/aclnn/DeviceTensors.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorChecks.h"
#include "acl/aclnn/OperatorLaunch.h"
#include "aclnnop/aclnn_embedding.h"
#include "aclnnop/aclnn_rotary_position_embedding.h"

namespace npusim::aclnn {
namespace {

constexpr size_t kMostDims = 8;

const TypeList kEmbeddingTypes = {c10::kBFloat16, c10::kFloat, c10::kHalf,   c10::kLong,         c10::kInt,
                                  c10::kShort,    c10::kChar,  c10::kByte,   c10::kBool,         c10::kDouble,
                                  c10::kComplexFloat, c10::kComplexDouble};

void describeEmbedding(OperatorPlan& plan, const aclTensor* weightArg, const aclTensor* indicesArg,
                       const aclTensor* outArg) {
  const aclTensor& weight = requireTensor(weightArg, "weight");
  const aclTensor& indices = requireTensor(indicesArg, "indices");
  const aclTensor& out = requireTensor(outArg, "out");
  requireType(weight, "weight", kEmbeddingTypes);
  requireType(indices, "indices", {c10::kLong, c10::kInt});
  requireType(out, "out", kEmbeddingTypes);
  requireDims(weight, "weight", 2, 2);
  requireDims(indices, "indices", 0, kMostDims - 1);
  requireDims(out, "out", 1, kMostDims);
  requireSameType(weight, "weight", out, "out");
  std::vector<int64_t> expected = indices.viewDims;
  expected.push_back(weight.viewDims[1]);
  requireShape(out, "out", expected);
  const size_t weightSlot = plan.input(weightArg, "weight");
  const size_t indicesSlot = plan.input(indicesArg, "indices");
  const size_t outSlot = plan.output(outArg, "out");
  plan.launch([=](const LaunchTensors& t) {
    const at::Tensor out = t[outSlot];
    // F.embedding is index_select over the flattened indices: into out itself when out can be
    // viewed as [rows, width], else into a temporary placed in out.
    if (out.is_contiguous()) {
      at::Tensor rows = out.view({-1, out.size(-1)});
      at::index_select_out(rows, t[weightSlot], 0, t[indicesSlot].reshape({-1}));
    } else {
      placeResult(at::embedding(t[weightSlot], t[indicesSlot]), out);
    }
  });
}

// RotaryPositionEmbedding's shape and mode errors are ACLNN_ERR_INNER_TILING_ERROR (CANN's).
void describeRotary(OperatorPlan& plan, const aclTensor* xArg, const aclTensor* cosArg, const aclTensor* sinArg,
                    int64_t mode, const aclTensor* outArg) {
  const aclTensor& x = requireTensor(xArg, "x");
  const aclTensor& cos = requireTensor(cosArg, "cos");
  const aclTensor& sin = requireTensor(sinArg, "sin");
  const aclTensor& out = requireTensor(outArg, "out");
  for (auto [tensor, name] : {std::pair{&x, "x"}, std::pair{&cos, "cos"}, std::pair{&sin, "sin"}, std::pair{&out, "out"}}) {
    requireType(*tensor, name, kFloatingTypes);
    requireValid(tensor->dataType == x.dataType, std::string(name) + "'s dtype should be x's " +
                                                     dataTypeName(x.dataType));
    requireDims(*tensor, name, 4, 4);
  }
  // Atlas A2/A3 implement mode 0 (half) and 1 (interleave); 2 (quarter) and 3 (interleave-half)
  // exist on the Ascend 950 only.
  if (mode != 0 && mode != 1) {
    throw AclnnFailure(ACLNN_ERR_INNER_TILING_ERROR,
                       "mode should be 0 (half) or 1 (interleave) on the simulated chip, but got " + std::to_string(mode));
  }
  if (out.viewDims != x.viewDims || cos.viewDims != sin.viewDims) {
    throw AclnnFailure(ACLNN_ERR_INNER_TILING_ERROR, "out's shape " + shapeText(out.viewDims) + " should be x's " +
                                                         shapeText(x.viewDims) + ", and cos's " +
                                                         shapeText(cos.viewDims) + " sin's " + shapeText(sin.viewDims));
  }
  const char* rotaryMode = mode == 0 ? "half" : "interleave";
  inferOrRefuse(ACLNN_ERR_INNER_TILING_ERROR, [&] {
    return callNpuOperator("npu::npu_rotary_mul", {{"self", metaTensor(x)}, {"r1", metaTensor(cos)},
                                                   {"r2", metaTensor(sin)}, {"rotary_mode", rotaryMode}});
  });
  const size_t xSlot = plan.input(xArg, "x");
  const size_t cosSlot = plan.input(cosArg, "cos");
  const size_t sinSlot = plan.input(sinArg, "sin");
  const size_t outSlot = plan.output(outArg, "out");
  plan.launch([=](const LaunchTensors& t) {
    const auto results = callNpuOperator("npu::npu_rotary_mul", {{"self", t[xSlot]}, {"r1", t[cosSlot]},
                                                                 {"r2", t[sinSlot]}, {"rotary_mode", rotaryMode}});
    placeResult(results.at(0).toTensor(), t[outSlot]);
  });
}

}  // namespace
}  // namespace npusim::aclnn

using npusim::aclnn::OperatorPlan;

extern "C" {

aclnnStatus aclnnEmbeddingGetWorkspaceSize(const aclTensor* weight, const aclTensor* indices, const aclTensor* out,
                                           uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnEmbedding", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::describeEmbedding(plan, weight, indices, out);
  });
}
aclnnStatus aclnnEmbedding(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnEmbedding", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor* x, const aclTensor* cos, const aclTensor* sin,
                                                         int64_t mode, aclTensor* out, uint64_t* workspaceSize,
                                                         aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnRotaryPositionEmbedding", workspaceSize, executor,
                                        [&](OperatorPlan& plan) { npusim::aclnn::describeRotary(plan, x, cos, sin, mode, out); });
}
aclnnStatus aclnnRotaryPositionEmbedding(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnRotaryPositionEmbedding", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
