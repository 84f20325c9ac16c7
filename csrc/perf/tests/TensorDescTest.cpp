#include <gtest/gtest.h>

#include "TestTensors.h"
#include "perf/TensorDesc.h"

using namespace npusim::perf;
using namespace npusim::perf::testing;

TEST(TensorDesc, SizesBytesAndScalars) {
  const OwnedTensor t = tensor({2, 3, 4}, DType::kFloat32);
  const TensorDesc d = t.desc();
  EXPECT_TRUE(d.defined());
  EXPECT_EQ(d.numel(), 24);
  EXPECT_DOUBLE_EQ(d.bytes(), 96.0);
  EXPECT_EQ(d.size(-1), 4);
  EXPECT_EQ(d.size(0), 2);
  EXPECT_EQ(d.size(7), 1);  // out of range reads as a broadcast dimension
  EXPECT_EQ(d.stride(0), 12);
  EXPECT_EQ(d.stride(-1), 1);

  const OwnedTensor scalar = tensor({}, DType::kInt64);
  EXPECT_EQ(scalar.desc().numel(), 1);
  EXPECT_DOUBLE_EQ(scalar.desc().bytes(), 8.0);

  EXPECT_FALSE(TensorDesc::undefined().defined());
  EXPECT_EQ(TensorDesc::undefined().numel(), 0);
  EXPECT_DOUBLE_EQ(TensorDesc::undefined().bytes(), 0.0);
  EXPECT_EQ(tensor({5, 0, 3}).desc().numel(), 0);
}

TEST(TensorDesc, LayoutQueries) {
  const OwnedTensor row = tensor({8, 16});
  EXPECT_TRUE(row.desc().isContiguous());
  EXPECT_EQ(row.desc().innermostDimension(), 1);

  const OwnedTensor col = transposed(row);  // [16, 8] with strides {1, 16}
  EXPECT_FALSE(col.desc().isContiguous());
  EXPECT_EQ(col.desc().innermostDimension(), 0);

  // Size-1 dimensions may carry any stride.
  const OwnedTensor unit{{1, 4}, {99, 1}, DType::kFloat16, true};
  EXPECT_TRUE(unit.desc().isContiguous());

  // A gather-like view with no unit stride.
  const OwnedTensor strided{{4, 4}, {8, 2}, DType::kFloat16, true};
  EXPECT_EQ(strided.desc().innermostDimension(), -1);
}

TEST(TensorDesc, ElementSizes) {
  EXPECT_EQ(elementSize(DType::kFloat16), 2);
  EXPECT_EQ(elementSize(DType::kBFloat16), 2);
  EXPECT_EQ(elementSize(DType::kFloat32), 4);
  EXPECT_EQ(elementSize(DType::kFloat64), 8);
  EXPECT_EQ(elementSize(DType::kInt8), 1);
  EXPECT_EQ(elementSize(DType::kBool), 1);
  EXPECT_EQ(elementSize(DType::kInt64), 8);
  EXPECT_EQ(elementSize(DType::kComplex64), 8);
  EXPECT_EQ(dtypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(unitName(Unit::kCpuFallback), "CPU fallback");
  EXPECT_EQ(placementName(Placement::kAiCpu), "AI CPU");
}
