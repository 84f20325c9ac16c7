// A recurrent layer kernel walks its time steps one after another.
#include <gtest/gtest.h>

#include "perf/ChipRates.h"
#include "perf/RecurrentKernelModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;

namespace {

RecurrentKernelWork lstm(int64_t steps, bool backward = false) {
  RecurrentKernelWork work;
  work.steps = steps;
  work.batch = 8;
  work.inputSize = 32;
  work.hiddenSize = 64;
  work.gateRows = 4 * 64;
  work.backward = backward;
  return work;
}

}  // namespace

TEST(RecurrentKernelModel, StepsRunOneAfterAnother) {
  const ChipRates rates = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  const FusedKernelCost one = priceRecurrentKernel(rates, lstm(1));
  const FusedKernelCost many = priceRecurrentKernel(rates, lstm(35));
  const FusedKernelCost twice = priceRecurrentKernel(rates, lstm(70));
  EXPECT_GT(one.seconds, 0);
  // One kernel setup, then the steps: twice the steps take twice the time
  // after the setup (not the time of one kernel, as parallel work would).
  const double setup = 10e-6;
  EXPECT_NEAR((twice.seconds - setup) / (many.seconds - setup), 2.0, 0.05);
  EXPECT_GT(many.seconds - setup, 30 * (one.seconds - setup) * 0.5);
  EXPECT_DOUBLE_EQ(many.flops, 35 * one.flops);
  EXPECT_DOUBLE_EQ(one.flops, 2.0 * 8 * 256 * (32 + 64));
}

TEST(RecurrentKernelModel, GradientDoesTwiceTheMatrixWork) {
  const ChipRates rates = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  const FusedKernelCost forward = priceRecurrentKernel(rates, lstm(10));
  const FusedKernelCost backward = priceRecurrentKernel(rates, lstm(10, true));
  EXPECT_DOUBLE_EQ(backward.flops, 2 * forward.flops);
  EXPECT_GT(backward.seconds, forward.seconds);
  EXPECT_GT(backward.bytes, forward.bytes);
}

TEST(RecurrentKernelModel, EmptyWorkCostsNothing) {
  const ChipRates rates = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  EXPECT_EQ(priceRecurrentKernel(rates, RecurrentKernelWork{}).seconds, 0);
}
