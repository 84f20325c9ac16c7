// FlashAttentionScore and FlashAttentionScoreGrad: torch_npu's npu_fusion_attention and
// npu_fusion_attention_grad fused kernels (the training FlashAttention: layouts BSH, SBH, BSND,
// BNSD; sparse modes 0-6; GQA; pse; attention masks), their results placed in the program's
// outputs. Dropout is refused: its mask (dropMaskOptional, made by a separate CANN operator)
// is a bit stream npusim's kernel cannot consume, so keepProb must be 1. The V2 forms add
// pseType: 1 is the first form's order (add pse, then scale); 0 without a pse is the same
// computation; an external pse multiplied first (0) or a pse generated inside (2, 3, with
// qStartIdx/kvStartIdx) is refused.
#include <ATen/ATen.h>

#include "acl/aclnn/DataTypes.h"
#include "acl/aclnn/DeviceTensors.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorChecks.h"
#include "acl/aclnn/OperatorLaunch.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"

namespace npusim::aclnn {
namespace {

using Arguments = std::vector<std::pair<std::string, c10::IValue>>;


// The attributes both directions share.
struct AttentionAttributes {
  std::optional<std::vector<int64_t>> prefix;
  double scale = 1;
  double keepProb = 1;
  int64_t preTokens = 0;
  int64_t nextTokens = 0;
  int64_t headNum = 0;
  std::string layout;
  int64_t innerPrecise = 0;
  int64_t sparseMode = 0;

  void addTo(Arguments& arguments, bool grad) const {
    arguments.emplace_back("head_num", headNum);
    arguments.emplace_back("input_layout", layout);
    arguments.emplace_back(grad ? "scale_value" : "scale", scale);
    arguments.emplace_back("keep_prob", keepProb);
    arguments.emplace_back("pre_tockens", preTokens);
    arguments.emplace_back("next_tockens", nextTokens);
    arguments.emplace_back("inner_precise", innerPrecise);
    arguments.emplace_back("prefix", prefix ? c10::IValue(*prefix) : c10::IValue());
    arguments.emplace_back("sparse_mode", sparseMode);
  }
};

AttentionAttributes attributesOf(const aclIntArray* prefix, double scale, double keepProb, int64_t preTokens,
                                 int64_t nextTokens, int64_t headNum, const char* inputLayout, int64_t innerPrecise,
                                 int64_t sparseMode) {
  requireArgument(inputLayout, "inputLayout");
  AttentionAttributes a;
  a.layout = inputLayout;
  requireValid(a.layout == "BSH" || a.layout == "SBH" || a.layout == "BSND" || a.layout == "BNSD",
               "inputLayout should be BSH, SBH, BSND or BNSD, but got " + a.layout +
                   " (TND is aclnnFlashAttentionVarLenScore's)");
  requireValid(keepProb == 1.0, "keepProb " + std::to_string(keepProb) +
                                    ": npusim runs FlashAttentionScore without dropout only (keepProb 1): a "
                                    "dropMaskOptional from the chip's mask generator cannot be reproduced");
  if (prefix != nullptr) {
    requireLive(prefix, "prefixOptional");
    a.prefix = prefix->values;
  }
  a.scale = scale, a.keepProb = keepProb, a.preTokens = preTokens, a.nextTokens = nextTokens;
  a.headNum = headNum, a.innerPrecise = innerPrecise, a.sparseMode = sparseMode;
  return a;
}

// The V2 forms' pseType (and the positions of the pse generated for 2 and 3).
void requirePseType(int64_t pseType, const aclTensor* pse, const aclIntArray* qStartIdx, const aclIntArray* kvStartIdx) {
  requireValid(pseType >= 0 && pseType <= 3, "pseType should be 0, 1, 2 or 3, but got " + std::to_string(pseType));
  requireValid(pseType == 1 || (pseType == 0 && pse == nullptr),
               "pseType " + std::to_string(pseType) +
                   ": npusim runs FlashAttentionScore with an external pse added before the scale (pseType 1) only");
  requireLive(qStartIdx, "qStartIdxOptional");
  requireLive(kvStartIdx, "kvStartIdxOptional");
}

c10::IValue optionalSlot(const LaunchTensors& t, size_t slot) {
  return t[slot].defined() ? c10::IValue(t[slot]) : c10::IValue();
}

// B, N, S and D of query (or of key, with its own head count) in a layout.
struct Geometry {
  int64_t batch = 0, heads = 0, sequence = 0, headDim = 0;
};

Geometry geometryOf(const aclTensor& t, const char* name, const std::string& layout, int64_t headNum) {
  const bool packed = layout == "BSH" || layout == "SBH";
  requireDims(t, name, packed ? 3 : 4, packed ? 3 : 4);
  const std::vector<int64_t>& d = t.viewDims;
  Geometry g;
  if (packed) {
    g.batch = layout == "BSH" ? d[0] : d[1];
    g.sequence = layout == "BSH" ? d[1] : d[0];
    requireValid(headNum > 0 && d[2] % headNum == 0,
                 std::string(name) + "'s hidden size " + std::to_string(d[2]) + " is not a multiple of headNum " +
                     std::to_string(headNum));
    g.headDim = d[2] / headNum;
    g.heads = headNum;
  } else {
    g.batch = d[0];
    g.heads = layout == "BNSD" ? d[1] : d[2];
    g.sequence = layout == "BNSD" ? d[2] : d[1];
    g.headDim = d[3];
  }
  return g;
}

// The documented shapes of FlashAttentionScore's inputs and outputs, checked before launch
// (what only the kernel can judge, it refuses when it runs).
struct AttentionShapes {
  Geometry query, key;
  std::vector<int64_t> statistics;  // [B, N, Sq, 8]
};

AttentionShapes checkShapes(const aclTensor& q, const aclTensor& k, const aclTensor& v, const aclTensor* pse,
                            const aclTensor* mask, const AttentionAttributes& a) {
  requireValid(a.headNum > 0, "headNum should be positive, but got " + std::to_string(a.headNum));
  requireValid(a.sparseMode >= 0 && a.sparseMode <= 6, "sparseMode should be in [0, 6], but got " +
                                                           std::to_string(a.sparseMode));
  AttentionShapes s;
  s.query = geometryOf(q, "query", a.layout, a.headNum);
  requireValid(a.layout == "BSH" || a.layout == "SBH" || s.query.heads == a.headNum,
               "headNum " + std::to_string(a.headNum) + " is not query's N " + std::to_string(s.query.heads));
  const bool packed = a.layout == "BSH" || a.layout == "SBH";
  const int64_t keyHidden = packed ? k.viewDims.back() : 0;
  const int64_t keyHeads = packed ? (s.query.headDim > 0 ? keyHidden / s.query.headDim : 0) : 0;
  s.key = geometryOf(k, "key", a.layout, packed ? std::max<int64_t>(keyHeads, 1) : a.headNum);
  requireSameShape(k, "key", v, "value");
  requireValid(s.key.batch == s.query.batch && s.key.headDim == s.query.headDim,
               "key " + shapeText(k.viewDims) + " does not match query " + shapeText(q.viewDims) + " in " + a.layout);
  requireValid(s.key.heads > 0 && s.query.heads % s.key.heads == 0,
               "query's head count " + std::to_string(s.query.heads) + " is not a multiple of key's " +
                   std::to_string(s.key.heads));
  s.statistics = {s.query.batch, s.query.heads, s.query.sequence, 8};
  const int64_t sq = s.query.sequence, skv = s.key.sequence, b = s.query.batch, n = s.query.heads;
  if (pse != nullptr) {
    const std::vector<int64_t>& d = pse->viewDims;
    requireValid(d == std::vector<int64_t>{b, n, sq, skv} || d == std::vector<int64_t>{b, n, 1, skv} ||
                     d == std::vector<int64_t>{1, n, sq, skv},
                 "realShift's shape should be [B,N,Sq,Skv], [B,N,1,Skv] or [1,N,Sq,Skv], but got " + shapeText(d));
  }
  // Modes 2-4 take the chip's compressed 2048 x 2048 mask; 0, 1, 5 and 6 a full one.
  if (mask != nullptr && (a.sparseMode == 0 || a.sparseMode == 1)) {
    const std::vector<int64_t>& d = mask->viewDims;
    requireValid(d == std::vector<int64_t>{sq, skv} || d == std::vector<int64_t>{b, 1, sq, skv} ||
                     d == std::vector<int64_t>{1, 1, sq, skv} || d == std::vector<int64_t>{b, n, sq, skv},
                 "attenMask's shape should be [Sq,Skv], [B,1,Sq,Skv], [1,1,Sq,Skv] or [B,N,Sq,Skv], but got " +
                     shapeText(d));
  }
  return s;
}

void describeForward(OperatorPlan& plan, const aclTensor* query, const aclTensor* key, const aclTensor* value,
                     const aclTensor* realShift, const aclTensor* dropMask, const aclTensor* paddingMask,
                     const aclTensor* attenMask, const AttentionAttributes& a, const aclTensor* softmaxMax,
                     const aclTensor* softmaxSum, const aclTensor* softmaxOut, const aclTensor* attentionOut) {
  const aclTensor& q = requireTensor(query, "query");
  const aclTensor& k = requireTensor(key, "key");
  const aclTensor& v = requireTensor(value, "value");
  requireTensor(softmaxMax, "softmaxMaxOut");
  requireTensor(softmaxSum, "softmaxSumOut");
  const aclTensor& out = requireTensor(attentionOut, "attentionOutOut");
  requireType(q, "query", kFloatingTypes);
  requireSameType(q, "query", k, "key");
  requireSameType(q, "query", v, "value");
  requireSameType(q, "query", out, "attentionOutOut");
  requireType(*softmaxMax, "softmaxMaxOut", {c10::kFloat});
  requireType(*softmaxSum, "softmaxSumOut", {c10::kFloat});
  if (realShift != nullptr) requireSameType(q, "query", *requireLiveTensor(realShift, "realShiftOptional"), "realShiftOptional");
  if (attenMask != nullptr) requireType(*requireLiveTensor(attenMask, "attenMaskOptional"), "attenMaskOptional", {c10::kBool, c10::kByte});
  requireLive(dropMask, "dropMaskOptional");
  requireLive(paddingMask, "paddingMaskOptional");
  requireLive(softmaxOut, "softmaxOutOut");
  const AttentionShapes shapes = checkShapes(q, k, v, realShift, attenMask, a);
  requireSameShape(out, "attentionOutOut", q, "query");
  requireShape(*softmaxMax, "softmaxMaxOut", shapes.statistics);
  requireShape(*softmaxSum, "softmaxSumOut", shapes.statistics);

  const size_t qSlot = plan.input(query, "query");
  const size_t kSlot = plan.input(key, "key");
  const size_t vSlot = plan.input(value, "value");
  const size_t pseSlot = plan.input(realShift, "realShiftOptional");
  plan.input(dropMask, "dropMaskOptional");
  plan.input(paddingMask, "paddingMaskOptional");
  const size_t maskSlot = plan.input(attenMask, "attenMaskOptional");
  const size_t maxSlot = plan.output(softmaxMax, "softmaxMaxOut");
  const size_t sumSlot = plan.output(softmaxSum, "softmaxSumOut");
  const size_t softmaxOutSlot = plan.output(softmaxOut, "softmaxOutOut");
  const size_t outSlot = plan.output(attentionOut, "attentionOutOut");
  plan.launch([=](const LaunchTensors& t) {
    Arguments arguments = {{"query", t[qSlot]}, {"key", t[kSlot]}, {"value", t[vSlot]},
                           {"pse", optionalSlot(t, pseSlot)}, {"atten_mask", optionalSlot(t, maskSlot)}};
    a.addTo(arguments, false);
    const auto results = callNpuOperator("npu::npu_fusion_attention", arguments);
    placeResult(results.at(0).toTensor(), t[outSlot]);
    placeResult(results.at(1).toTensor(), t[maxSlot]);
    placeResult(results.at(2).toTensor(), t[sumSlot]);
    // softmaxOutOut is reserved (the kernel keeps no softmax); an empty result fills nothing.
    const at::Tensor softmax = results.at(3).toTensor();
    if (t[softmaxOutSlot].defined() && softmax.sizes() == t[softmaxOutSlot].sizes()) placeResult(softmax, t[softmaxOutSlot]);
  });
}

void describeBackward(OperatorPlan& plan, const aclTensor* query, const aclTensor* key, const aclTensor* value,
                      const aclTensor* dy, const aclTensor* pseShift, const aclTensor* dropMask,
                      const aclTensor* paddingMask, const aclTensor* attenMask, const aclTensor* softmaxMax,
                      const aclTensor* softmaxSum, const aclTensor* softmaxIn, const aclTensor* attentionIn,
                      const AttentionAttributes& a, const aclTensor* dq, const aclTensor* dk, const aclTensor* dv,
                      const aclTensor* dpse) {
  const aclTensor& q = requireTensor(query, "query");
  const aclTensor& k = requireTensor(key, "keyIn");
  const aclTensor& v = requireTensor(value, "value");
  const aclTensor& g = requireTensor(dy, "dy");
  requireType(q, "query", kFloatingTypes);
  requireSameType(q, "query", k, "keyIn");
  requireSameType(q, "query", v, "value");
  requireSameType(q, "query", g, "dy");
  for (auto [tensor, name] : {std::pair{dq, "dqOut"}, std::pair{dk, "dkOut"}, std::pair{dv, "dvOut"}}) {
    requireSameType(q, "query", requireTensor(tensor, name), name);
  }
  if (pseShift != nullptr) requireSameType(q, "query", *requireLiveTensor(pseShift, "pseShiftOptional"), "pseShiftOptional");
  if (attenMask != nullptr) requireType(*requireLiveTensor(attenMask, "attenMaskOptional"), "attenMaskOptional", {c10::kBool, c10::kByte});
  for (auto [tensor, name] : {std::pair{softmaxMax, "softmaxMaxOptional"}, std::pair{softmaxSum, "softmaxSumOptional"}}) {
    if (tensor != nullptr) requireType(*requireLiveTensor(tensor, name), name, {c10::kFloat});
  }
  for (auto [tensor, name] : {std::pair{dropMask, "dropMaskOptional"}, std::pair{paddingMask, "paddingMaskOptional"},
                              std::pair{softmaxIn, "softmaxInOptional"}, std::pair{attentionIn, "attentionInOptional"},
                              std::pair{dpse, "dpseOut"}}) {
    requireLive(tensor, name);
  }
  // The inputs in the order of the GetWorkspaceSize arguments, and the kernel's name for each
  // (the masks it has no use for take a slot but are not passed).
  const std::vector<std::pair<const aclTensor*, const char*>> inputTensors = {
      {query, "query"},          {key, "key"},           {value, "value"},       {dy, "dy"},
      {pseShift, "pse"},         {dropMask, nullptr},    {paddingMask, nullptr}, {attenMask, "atten_mask"},
      {softmaxMax, "softmax_max"}, {softmaxSum, "softmax_sum"}, {softmaxIn, "softmax_in"},
      {attentionIn, "attention_in"}};
  auto argumentsOf = [a, inputTensors](auto&& valueOf) {
    Arguments arguments;
    for (size_t i = 0; i < inputTensors.size(); ++i) {
      if (inputTensors[i].second != nullptr) arguments.emplace_back(inputTensors[i].second, valueOf(i));
    }
    a.addTo(arguments, true);
    return arguments;
  };
  const AttentionShapes shapes = checkShapes(q, k, v, pseShift, attenMask, a);
  requireSameShape(g, "dy", q, "query");
  requireSameShape(*dq, "dqOut", q, "query");
  requireSameShape(*dk, "dkOut", k, "keyIn");
  requireSameShape(*dv, "dvOut", v, "value");
  for (const aclTensor* stat : {softmaxMax, softmaxSum}) {
    if (stat != nullptr) requireShape(*stat, stat == softmaxMax ? "softmaxMaxOptional" : "softmaxSumOptional", shapes.statistics);
  }
  if (dpse != nullptr && pseShift != nullptr) requireSameShape(*dpse, "dpseOut", *pseShift, "pseShiftOptional");

  const char* slotNames[] = {"query",           "keyIn",       "value",           "dy",
                             "pseShiftOptional", "dropMaskOptional", "paddingMaskOptional", "attenMaskOptional",
                             "softmaxMaxOptional", "softmaxSumOptional", "softmaxInOptional", "attentionInOptional"};
  std::vector<size_t> slots;
  for (size_t i = 0; i < inputTensors.size(); ++i) slots.push_back(plan.input(inputTensors[i].first, slotNames[i]));
  const size_t dqSlot = plan.output(dq, "dqOut");
  const size_t dkSlot = plan.output(dk, "dkOut");
  const size_t dvSlot = plan.output(dv, "dvOut");
  const size_t dpseSlot = plan.output(dpse, "dpseOut");
  const bool hasPse = pseShift != nullptr;
  plan.launch([=](const LaunchTensors& t) {
    const auto results = callNpuOperator("npu::npu_fusion_attention_grad",
                                         argumentsOf([&](size_t i) { return optionalSlot(t, slots[i]); }));
    placeResult(results.at(0).toTensor(), t[dqSlot]);
    placeResult(results.at(1).toTensor(), t[dkSlot]);
    placeResult(results.at(2).toTensor(), t[dvSlot]);
    if (hasPse) placeResult(results.at(3).toTensor(), t[dpseSlot]);
  });
}

}  // namespace
}  // namespace npusim::aclnn

using npusim::aclnn::OperatorPlan;

extern "C" {

aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnFlashAttentionScore", workspaceSize, executor, [&](OperatorPlan& plan) {
    const auto attributes = npusim::aclnn::attributesOf(prefixOptional, scaleValue, keepProb, preTokens, nextTokens,
                                                        headNum, inputLayout, innerPrecise, sparseMode);
    npusim::aclnn::describeForward(plan, query, key, value, realShiftOptional, dropMaskOptional, paddingMaskOptional,
                                   attenMaskOptional, attributes, softmaxMaxOut, softmaxSumOut, softmaxOutOut,
                                   attentionOutOut);
  });
}
aclnnStatus aclnnFlashAttentionScore(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnFlashAttentionScore", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnFlashAttentionScoreV2", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::requirePseType(pseType, realShiftOptional, qStartIdxOptional, kvStartIdxOptional);
    const auto attributes = npusim::aclnn::attributesOf(prefixOptional, scaleValue, keepProb, preTokens, nextTokens,
                                                        headNum, inputLayout, innerPrecise, sparseMode);
    npusim::aclnn::describeForward(plan, query, key, value, realShiftOptional, dropMaskOptional, paddingMaskOptional,
                                   attenMaskOptional, attributes, softmaxMaxOut, softmaxSumOut, softmaxOutOut,
                                   attentionOutOut);
  });
}
aclnnStatus aclnnFlashAttentionScoreV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnFlashAttentionScoreV2", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnFlashAttentionScoreGrad", workspaceSize, executor, [&](OperatorPlan& plan) {
    const auto attributes = npusim::aclnn::attributesOf(prefixOptional, scaleValue, keepProb, preTokens, nextTokens,
                                                        headNum, inputLayout, innerPrecise, sparseMode);
    npusim::aclnn::describeBackward(plan, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
                                    paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional,
                                    softmaxInOptional, attentionInOptional, attributes, dqOut, dkOut, dvOut, dpseOut);
  });
}
aclnnStatus aclnnFlashAttentionScoreGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnFlashAttentionScoreGrad", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnFlashAttentionScoreGradV2", workspaceSize, executor, [&](OperatorPlan& plan) {
    npusim::aclnn::requirePseType(pseType, pseShiftOptional, qStartIdxOptional, kvStartIdxOptional);
    const auto attributes = npusim::aclnn::attributesOf(prefixOptional, scaleValue, keepProb, preTokens, nextTokens,
                                                        headNum, inputLayout, innerPrecise, sparseMode);
    npusim::aclnn::describeBackward(plan, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
                                    paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional,
                                    softmaxInOptional, attentionInOptional, attributes, dqOut, dkOut, dvOut, dpseOut);
  });
}
aclnnStatus aclnnFlashAttentionScoreGradV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return npusim::aclnn::runOperator("aclnnFlashAttentionScoreGradV2", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
