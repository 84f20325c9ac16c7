// The memo of prices returns exactly what the cost model says, whatever it
// remembered before.
#include <gtest/gtest.h>

#include "TestTensors.h"
#include "perf/PriceMemo.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;
using namespace npusim::perf::testing;

namespace {

void expectSame(const Cost& a, const Cost& b) {
  EXPECT_EQ(a.deviceNs, b.deviceNs);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.hostNs, b.hostNs);
  EXPECT_EQ(a.synchronizesHost, b.synchronizesHost);
}

}  // namespace

TEST(PriceMemo, RemembersAndDistinguishesEveryArgument) {
  const CostModel model(runtime::findChip("Ascend910B2"));
  PriceMemo memo;
  const Operands a{tensor({64, 128}), tensor({128, 256})};
  const Operands c{tensor({64, 256})};
  const Operands b{tensor({64, 128}), transposed(tensor({256, 128}))};
  const Operands fp32{tensor({64, 128}, DType::kFloat32), tensor({128, 256}, DType::kFloat32)};
  for (int round = 0; round < 3; ++round) {
    for (OperatorKind kind : {OperatorKind::kMatmul, OperatorKind::kElementwise, OperatorKind::kReduction}) {
      for (Placement placement : {Placement::kAiCore, Placement::kAiCpu, Placement::kCpuFallback}) {
        for (const Operands* inputs : {&a, &b, &fp32}) {
          for (bool hf32 : {false, true}) {
            CostOptions options;
            options.allowHf32Matmul = hf32;
            expectSame(memo.price(model, kind, inputs->data(), inputs->size(), c.data(), c.size(), placement, options),
                       model.price(kind, inputs->data(), inputs->size(), c.data(), c.size(), placement, options));
          }
        }
      }
    }
  }
  EXPECT_GT(memo.hits(), 0u);
}

TEST(PriceMemo, TellsL2ResidencyAndIntegerArgumentsApart) {
  const CostModel model(runtime::findChip("Ascend910B2"));
  PriceMemo memo;
  OwnedTensor x = tensor({1 << 20});
  TensorDesc in[2] = {x.desc(), x.desc()};
  const TensorDesc out[1] = {x.desc()};
  const Cost cold = memo.price(model, OperatorKind::kElementwise, in, 2, out, 1, Placement::kAiCore, {});
  in[0].l2Resident = in[1].l2Resident = true;
  const Cost warm = memo.price(model, OperatorKind::kElementwise, in, 2, out, 1, Placement::kAiCore, {});
  expectSame(warm, model.price(OperatorKind::kElementwise, in, 2, out, 1, Placement::kAiCore, {}));
  EXPECT_LT(warm.deviceNs, cold.deviceNs);
  const int64_t one[] = {0, 1}, two[] = {0, 2};
  const Operands conv{tensor({8, 16, 32, 32}), tensor({32, 8, 3, 3})};
  const Operands convOut{tensor({8, 32, 30, 30})};
  expectSame(memo.price(model, OperatorKind::kConvolution, conv.data(), 2, convOut.data(), 1, Placement::kAiCore, {}, one, 2),
             model.price(OperatorKind::kConvolution, conv.data(), 2, convOut.data(), 1, Placement::kAiCore, {}, one, 2));
  expectSame(memo.price(model, OperatorKind::kConvolution, conv.data(), 2, convOut.data(), 1, Placement::kAiCore, {}, two, 2),
             model.price(OperatorKind::kConvolution, conv.data(), 2, convOut.data(), 1, Placement::kAiCore, {}, two, 2));
}

TEST(PriceMemo, PricesLargeCallsDirectly) {
  const CostModel model(runtime::findChip("Ascend910B2"));
  PriceMemo memo;
  std::vector<OwnedTensor> many;
  for (int i = 0; i < 20; ++i) many.push_back(tensor({4, 4, 4, 4}));
  std::vector<TensorDesc> descs;
  for (const auto& t : many) descs.push_back(t.desc());
  for (int round = 0; round < 2; ++round) {
    expectSame(memo.price(model, OperatorKind::kOptimizerFused, descs.data(), int(descs.size()), descs.data(),
                          int(descs.size()), Placement::kAiCore, {}),
               model.price(OperatorKind::kOptimizerFused, descs.data(), int(descs.size()), descs.data(),
                           int(descs.size()), Placement::kAiCore, {}));
  }
  EXPECT_EQ(memo.hits(), 0u);
}

// The backend writes a call's key itself (from its TensorImpls, without
// descriptions): written the same way, it finds what price() remembered, and
// price() finds what was remembered under it.
TEST(PriceMemo, KeysWrittenByTheCallerMatchPrice) {
  const CostModel model(runtime::findChip("Ascend910B2"));
  PriceMemo memo;
  const Operands in{tensor({16, 32}), transposed(tensor({32, 16}))};
  const Operands out{tensor({16, 32})};
  auto keyOf = [&](const Operands& inputs, bool resident) {
    PriceMemo::Key key;
    int64_t* cursor = key.words;
    uint64_t hash = 0;
    price_key::putHeader(cursor, hash, OperatorKind::kElementwise, Placement::kAiCore, {}, int(inputs.size()),
                         int(out.size()), 0);
    for (int i = 0; i < inputs.size(); ++i) {
      const TensorDesc& d = inputs.data()[i];
      price_key::putOperand(cursor, hash, d.rank, d.dtype, resident, d.sizes, d.strides);
    }
    const TensorDesc& o = out.data()[0];
    price_key::putOperand(cursor, hash, o.rank, o.dtype, false, o.sizes, o.strides);
    key.length = int(cursor - key.words);
    key.hash = hash;
    return key;
  };
  const Cost priced = memo.price(model, OperatorKind::kElementwise, in.data(), in.size(), out.data(), out.size(),
                                 Placement::kAiCore, {});
  const PriceMemo::Key cold = keyOf(in, false);
  ASSERT_NE(memo.find(model, cold), nullptr);
  expectSame(*memo.find(model, cold), priced);
  // Another L2 flag is another key: not found until remembered, then price() finds it.
  const PriceMemo::Key warm = keyOf(in, true);
  EXPECT_EQ(memo.find(model, warm), nullptr);
  TensorDesc residentIn[2] = {in.data()[0], in.data()[1]};
  residentIn[0].l2Resident = residentIn[1].l2Resident = true;
  const Cost warmCost = model.price(OperatorKind::kElementwise, residentIn, 2, out.data(), out.size(), Placement::kAiCore, {});
  memo.remember(model, warm, warmCost);
  const uint64_t hits = memo.hits();
  expectSame(memo.price(model, OperatorKind::kElementwise, residentIn, 2, out.data(), out.size(), Placement::kAiCore, {}),
             warmCost);
  EXPECT_EQ(memo.hits(), hits + 1);
}
