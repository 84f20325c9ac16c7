// The element-wise aclnn operators: Add, Adds, Sub, Subs, Mul, Muls, Div, Divs (and their
// Inplace forms), Gelu, Silu, Cast. Each runs the aten out= (or in-place) kernel the PyTorch
// path runs for the same expression: torch.add(self, other, alpha=alpha, out=out) is aclnnAdd.
#include <ATen/ATen.h>

#include "acl/aclnn/DataTypes.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorChecks.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_div.h"
#include "aclnnop/aclnn_gelu.h"
#include "aclnnop/aclnn_mul.h"
#include "aclnnop/aclnn_silu.h"
#include "aclnnop/aclnn_sub.h"

namespace npusim::aclnn {
namespace {

constexpr size_t kMostDims = 8;

enum class Binary { kAdd, kSub, kMul, kDiv };

// A Python number as the PyTorch path passes it: a CPU scalar tensor marked as a wrapped
// number, so that type promotion treats it as a scalar.
at::Tensor wrappedNumber(const c10::Scalar& value) {
  at::Tensor t = at::scalar_tensor(value, at::TensorOptions().dtype(value.type()));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

at::Tensor apply(Binary op, const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  switch (op) {
    case Binary::kAdd: return at::add(self, other, alpha);
    case Binary::kSub: return at::sub(self, other, alpha);
    case Binary::kMul: return at::mul(self, other);
    case Binary::kDiv: return at::div(self, other);
  }
  return {};
}

void applyOut(Binary op, at::Tensor out, const at::Tensor& self, const at::Tensor& other,
              const c10::Scalar& alpha) {
  switch (op) {
    case Binary::kAdd: at::add_out(out, self, other, alpha); return;
    case Binary::kSub: at::sub_out(out, self, other, alpha); return;
    case Binary::kMul: at::mul_out(out, self, other); return;
    case Binary::kDiv: at::div_out(out, self, other); return;
  }
}

void applyInPlace(Binary op, const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  switch (op) {
    case Binary::kAdd: self.add_(other, alpha); return;
    case Binary::kSub: self.sub_(other, alpha); return;
    case Binary::kMul: self.mul_(other); return;
    case Binary::kDiv: self.div_(other); return;
  }
}

// The arguments of one binary call: `other` is a tensor or a scalar; an in-place call has no out.
struct BinaryCall {
  Binary op;
  bool inPlace;
  const aclTensor* self;
  const char* selfName;
  const aclTensor* otherTensor;
  const aclScalar* otherScalar;
  bool takesAlpha;
  const aclScalar* alpha;
  const aclTensor* out;
};

void describeBinary(OperatorPlan& plan, const BinaryCall& call) {
  const bool inPlace = call.inPlace;
  const aclTensor& self = requireTensor(call.self, call.selfName);
  const aclTensor* otherTensor = nullptr;
  const aclScalar* otherScalar = nullptr;
  if (call.otherTensor != nullptr || call.otherScalar == nullptr) {
    otherTensor = &requireTensor(call.otherTensor, "other");
  } else {
    otherScalar = &requireScalar(call.otherScalar, "other");
  }
  c10::Scalar alpha(1);
  if (call.takesAlpha) alpha = scalarValue(requireScalar(call.alpha, "alpha"));
  requireType(self, call.selfName, kElementwiseTypes);
  requireDims(self, call.selfName, 0, kMostDims);
  if (otherTensor != nullptr) {
    requireType(*otherTensor, "other", kElementwiseTypes);
    requireDims(*otherTensor, "other", 0, kMostDims);
    broadcastShape(self, call.selfName, *otherTensor, "other");
  }
  // PyTorch's rules decide the result: type promotion, alpha's kind, bool subtraction.
  const at::Tensor metaOther = otherTensor != nullptr ? metaTensor(*otherTensor) : wrappedNumber(scalarValue(*otherScalar));
  const at::Tensor result = inferOrRefuse(ACLNN_ERR_PARAM_INVALID,
                                          [&] { return apply(call.op, metaTensor(self), metaOther, alpha); });
  const aclTensor& target = inPlace ? self : requireTensor(call.out, "out");
  if (!inPlace) {
    requireType(target, "out", kElementwiseTypes);
    requireDims(target, "out", 0, kMostDims);
  }
  requireShape(target, inPlace ? call.selfName : "out", std::vector<int64_t>(result.sizes().begin(), result.sizes().end()));
  requireValid(c10::canCast(result.scalar_type(), *scalarTypeOf(target.dataType)),
               "the result type " + typeName(result.scalar_type()) + " of " + call.selfName + " and other cannot be " +
                   "cast to " + (inPlace ? call.selfName : "out") + "'s dtype " + dataTypeName(target.dataType));

  const size_t selfSlot = plan.input(call.self, call.selfName);
  const size_t otherSlot = otherTensor != nullptr ? plan.input(otherTensor, "other") : 0;
  const size_t outSlot = inPlace ? selfSlot : plan.output(call.out, "out");
  const std::optional<c10::Scalar> scalar =
      otherScalar != nullptr ? std::optional<c10::Scalar>(scalarValue(*otherScalar)) : std::nullopt;
  const Binary op = call.op;
  plan.launch([=](const LaunchTensors& t) {
    const at::Tensor other = scalar ? wrappedNumber(*scalar) : t[otherSlot];
    if (inPlace) {
      applyInPlace(op, t[selfSlot], other, alpha);
    } else {
      applyOut(op, t[outSlot], t[selfSlot], other, alpha);
    }
  });
}

aclnnStatus prepareBinary(const char* api, const BinaryCall& call, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareOperator(api, workspaceSize, executor, [&](OperatorPlan& plan) { describeBinary(plan, call); });
}

// Gelu and Silu: out of self's type and shape.
void describeActivation(OperatorPlan& plan, const aclTensor* selfArg, const aclTensor* outArg,
                        void (*kernel)(at::Tensor out, const at::Tensor& self)) {
  const aclTensor& self = requireTensor(selfArg, "self");
  const aclTensor& out = requireTensor(outArg, "out");
  requireType(self, "self", kFloatingTypes);
  requireType(out, "out", kFloatingTypes);
  requireDims(self, "self", 0, kMostDims);
  requireDims(out, "out", 0, kMostDims);
  requireSameType(self, "self", out, "out");
  requireSameShape(self, "self", out, "out");
  const size_t selfSlot = plan.input(selfArg, "self");
  const size_t outSlot = plan.output(outArg, "out");
  plan.launch([=](const LaunchTensors& t) { kernel(t[outSlot], t[selfSlot]); });
}

void geluTanh(at::Tensor out, const at::Tensor& self) { at::gelu_out(out, self, "tanh"); }
void silu(at::Tensor out, const at::Tensor& self) { at::silu_out(out, self); }

// Cast's types on Atlas A2/A3 (no COMPLEX32, HIFLOAT8, FLOAT8, FLOAT4 or INT4 there).
const TypeList kCastTypes = {c10::kHalf,  c10::kFloat,  c10::kDouble, c10::kChar,  c10::kByte,
                             c10::kShort, c10::kUInt16, c10::kInt,    c10::kUInt32, c10::kLong,
                             c10::kUInt64, c10::kBool,  c10::kComplexFloat, c10::kComplexDouble, c10::kBFloat16};

}  // namespace
}  // namespace npusim::aclnn

using npusim::aclnn::Binary;
using npusim::aclnn::BinaryCall;
using npusim::aclnn::prepareBinary;
using npusim::aclnn::runOperator;

extern "C" {

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor* self, const aclTensor* other, const aclScalar* alpha,
                                     aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnAdd", {Binary::kAdd, false, self, "self", other, nullptr, true, alpha, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnAdd(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnAdd", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnAddsGetWorkspaceSize(const aclTensor* self, const aclScalar* other, const aclScalar* alpha,
                                      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnAdds", {Binary::kAdd, false, self, "self", nullptr, other, true, alpha, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnAdds(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnAdds", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceAddGetWorkspaceSize(const aclTensor* selfRef, const aclTensor* other, const aclScalar* alpha,
                                            uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceAdd", {Binary::kAdd, true, selfRef, "selfRef", other, nullptr, true, alpha, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceAdd(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceAdd", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceAddsGetWorkspaceSize(const aclTensor* selfRef, const aclScalar* other, const aclScalar* alpha,
                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceAdds", {Binary::kAdd, true, selfRef, "selfRef", nullptr, other, true, alpha, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceAdds(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceAdds", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnSubGetWorkspaceSize(const aclTensor* self, const aclTensor* other, const aclScalar* alpha,
                                     aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnSub", {Binary::kSub, false, self, "self", other, nullptr, true, alpha, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnSub(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnSub", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnSubsGetWorkspaceSize(const aclTensor* self, const aclScalar* other, const aclScalar* alpha,
                                      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnSubs", {Binary::kSub, false, self, "self", nullptr, other, true, alpha, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnSubs(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnSubs", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceSubGetWorkspaceSize(aclTensor* selfRef, const aclTensor* other, const aclScalar* alpha,
                                            uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceSub", {Binary::kSub, true, selfRef, "selfRef", other, nullptr, true, alpha, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceSub(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceSub", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceSubsGetWorkspaceSize(aclTensor* selfRef, const aclScalar* other, const aclScalar* alpha,
                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceSubs", {Binary::kSub, true, selfRef, "selfRef", nullptr, other, true, alpha, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceSubs(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceSubs", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor* self, const aclTensor* other, aclTensor* out,
                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnMul", {Binary::kMul, false, self, "self", other, nullptr, false, nullptr, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnMul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnMul", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMulsGetWorkspaceSize(const aclTensor* self, const aclScalar* other, aclTensor* out,
                                      uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnMuls", {Binary::kMul, false, self, "self", nullptr, other, false, nullptr, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnMuls(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnMuls", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceMulGetWorkspaceSize(aclTensor* selfRef, const aclTensor* other, uint64_t* workspaceSize,
                                            aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceMul", {Binary::kMul, true, selfRef, "selfRef", other, nullptr, false, nullptr, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceMul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceMul", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceMulsGetWorkspaceSize(aclTensor* selfRef, const aclScalar* other, uint64_t* workspaceSize,
                                             aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceMuls", {Binary::kMul, true, selfRef, "selfRef", nullptr, other, false, nullptr, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceMuls(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceMuls", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnDivGetWorkspaceSize(const aclTensor* self, const aclTensor* other, aclTensor* out,
                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnDiv", {Binary::kDiv, false, self, "self", other, nullptr, false, nullptr, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnDiv(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnDiv", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnDivsGetWorkspaceSize(const aclTensor* self, const aclScalar* other, aclTensor* out,
                                      uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepareBinary("aclnnDivs", {Binary::kDiv, false, self, "self", nullptr, other, false, nullptr, out}, workspaceSize,
                       executor);
}
aclnnStatus aclnnDivs(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnDivs", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceDivGetWorkspaceSize(aclTensor* selfRef, const aclTensor* other, uint64_t* workspaceSize,
                                            aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceDiv", {Binary::kDiv, true, selfRef, "selfRef", other, nullptr, false, nullptr, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceDiv(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceDiv", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnInplaceDivsGetWorkspaceSize(aclTensor* selfRef, const aclScalar* other, uint64_t* workspaceSize,
                                             aclOpExecutor** executor) {
  return prepareBinary("aclnnInplaceDivs", {Binary::kDiv, true, selfRef, "selfRef", nullptr, other, false, nullptr, nullptr},
                       workspaceSize, executor);
}
aclnnStatus aclnnInplaceDivs(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnInplaceDivs", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnGeluGetWorkspaceSize(const aclTensor* self, aclTensor* out, uint64_t* workspaceSize,
                                      aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnGelu", workspaceSize, executor, [&](npusim::aclnn::OperatorPlan& plan) {
    npusim::aclnn::describeActivation(plan, self, out, &npusim::aclnn::geluTanh);
  });
}
aclnnStatus aclnnGelu(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnGelu", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnSiluGetWorkspaceSize(const aclTensor* self, aclTensor* out, uint64_t* workspaceSize,
                                      aclOpExecutor** executor) {
  return npusim::aclnn::prepareOperator("aclnnSilu", workspaceSize, executor, [&](npusim::aclnn::OperatorPlan& plan) {
    npusim::aclnn::describeActivation(plan, self, out, &npusim::aclnn::silu);
  });
}
aclnnStatus aclnnSilu(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnSilu", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor* self, const aclDataType dtype, aclTensor* out,
                                      uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace npusim::aclnn;
  return prepareOperator("aclnnCast", workspaceSize, executor, [&](OperatorPlan& plan) {
    const aclTensor& source = requireTensor(self, "self");
    const aclTensor& target = requireTensor(out, "out");
    requireType(source, "self", kCastTypes);
    const int32_t wanted = enumBits(dtype);
    requireDataType(wanted, "dtype", kCastTypes);
    requireValid(target.dataType == wanted, "out's dtype " + dataTypeName(target.dataType) + " should be dtype " +
                                                dataTypeName(wanted));
    requireDims(source, "self", 0, kMostDims);
    requireDims(target, "out", 0, kMostDims);
    requireSameShape(source, "self", target, "out");
    const size_t selfSlot = plan.input(self, "self");
    const size_t outSlot = plan.output(out, "out");
    // The PyTorch path's tensor.to(dtype): one Cast kernel on the device.
    plan.launch([=](const LaunchTensors& t) { t[outSlot].copy_(t[selfSlot]); });
  });
}
aclnnStatus aclnnCast(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return runOperator("aclnnCast", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
