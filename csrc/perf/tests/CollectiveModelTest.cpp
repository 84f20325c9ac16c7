#include <gtest/gtest.h>

#include "perf/CollectiveModel.h"

using namespace npusim::perf;

namespace {

CollectiveTopology topology(int world, int perServer, ServerKind server = ServerKind::k910B) {
  CollectiveTopology t;
  t.server = server;
  t.worldSize = world;
  t.ranksPerServer = perServer;
  return t;
}

constexpr uint64_t kLarge = 64ull << 20;  // the 64 MiB message of the published sweeps

}  // namespace

// ascend-hardware.md §3.3: 8-NPU all-reduce bus bandwidth ~126 GB/s, all-gather ~130 GB/s.
TEST(CollectiveModel, EightNpu910BMatchesPublishedBusBandwidth) {
  const CollectiveModel model;
  const CollectiveCost allReduce = model.price(Collective::kAllReduce, kLarge, topology(8, 8));
  EXPECT_EQ(allReduce.algorithm, "mesh");
  EXPECT_NEAR(allReduce.busBandwidthFactor, 1.75, 1e-12);
  EXPECT_NEAR(allReduce.busBandwidth(kLarge) / 1e9, 126.0, 126.0 * 0.2);
  const CollectiveCost allGather = model.price(Collective::kAllGather, kLarge, topology(8, 8));
  EXPECT_NEAR(allGather.busBandwidth(kLarge) / 1e9, 130.0, 130.0 * 0.2);
}

// 2- and 4-card groups: all-reduce algbw 18 / 30 GB/s (subsets use fewer links).
TEST(CollectiveModel, SmallGroupsUseFewerLinks) {
  const CollectiveModel model;
  for (auto [cards, algbw] : {std::pair{2, 18.0}, std::pair{4, 30.0}}) {
    const CollectiveCost cost = model.price(Collective::kAllReduce, kLarge, topology(cards, 8));
    const double measured = static_cast<double>(kLarge) / (cost.ns * 1e-9) / 1e9;
    EXPECT_NEAR(measured, algbw, algbw * 0.35) << cards << " cards";
  }
}

TEST(CollectiveModel, CrossServerIsHierarchicalAndSlower) {
  const CollectiveModel model;
  const CollectiveCost one = model.price(Collective::kAllReduce, kLarge, topology(8, 8));
  const CollectiveCost two = model.price(Collective::kAllReduce, kLarge, topology(16, 8));
  const CollectiveCost three = model.price(Collective::kAllReduce, kLarge, topology(24, 8));
  EXPECT_EQ(two.algorithm, "hierarchical(mesh,halving-doubling)");
  EXPECT_EQ(three.algorithm, "hierarchical(mesh,ring)");
  EXPECT_GT(two.ns, one.ns);
  EXPECT_GT(three.ns, two.ns);
  // One rank per server: pure inter-server algorithm.
  EXPECT_EQ(model.price(Collective::kAllReduce, kLarge, topology(4, 1)).algorithm, "halving-doubling");
  EXPECT_EQ(model.price(Collective::kAllReduce, kLarge, topology(3, 1)).algorithm, "ring");
}

TEST(CollectiveModel, A910ServerCrossesPcieBetweenItsTwoMeshes) {
  const CollectiveModel model;
  const CollectiveCost inGroup = model.price(Collective::kAllReduce, kLarge, topology(4, 8, ServerKind::k910A));
  const CollectiveCost whole = model.price(Collective::kAllReduce, kLarge, topology(8, 8, ServerKind::k910A));
  EXPECT_EQ(inGroup.algorithm, "mesh");
  EXPECT_EQ(whole.algorithm, "mesh+pcie");
  const CollectiveCost b = model.price(Collective::kAllReduce, kLarge, topology(8, 8));
  EXPECT_GT(whole.ns, b.ns);  // the 910B's full mesh beats two meshes over PCIe
}

TEST(CollectiveModel, LatencyDominatesSmallMessagesAndTimeGrowsWithSize) {
  const CollectiveModel model;
  const auto t = topology(8, 8);
  const CollectiveCost tiny = model.price(Collective::kAllReduce, 4, t);
  EXPECT_GE(tiny.ns, 2 * model.rates().intraPhaseLatencyNs);
  EXPECT_LT(tiny.ns, 2 * model.rates().intraPhaseLatencyNs + 1000);
  uint64_t previous = 0;
  for (uint64_t bytes = 1024; bytes <= (256ull << 20); bytes *= 4) {
    const uint64_t ns = model.price(Collective::kReduceScatter, bytes, t).ns;
    EXPECT_GT(ns, previous);
    previous = ns;
  }
  EXPECT_EQ(model.price(Collective::kBarrier, 0, t).ns, tiny.ns);
}

TEST(CollectiveModel, BufferSizeSplitsLargeMessagesIntoChunks) {
  const CollectiveModel model;
  auto small = topology(8, 8);
  small.bufferBytes = 1ull << 20;
  auto big = topology(8, 8);
  const uint64_t chunked = model.price(Collective::kAllReduce, kLarge, small).ns;
  const uint64_t whole = model.price(Collective::kAllReduce, kLarge, big).ns;
  // 64 chunks pay the latency 64 times.
  EXPECT_NEAR(static_cast<double>(chunked - whole), 63.0 * 2 * model.rates().intraPhaseLatencyNs, 1000.0);
}

TEST(CollectiveModel, PointToPointUsesOneLinkOrRoce) {
  const CollectiveModel model;
  const auto t = topology(16, 8);
  const CollectiveCost near = model.price(Collective::kSendRecv, kLarge, t, true);
  const CollectiveCost far = model.price(Collective::kSendRecv, kLarge, t, false);
  // Latency included: within 1% of the link rate for 64 MiB.
  EXPECT_NEAR(static_cast<double>(kLarge) / (near.ns * 1e-9), model.rates().hccsLinkBytesPerS, 0.01 * 18e9);
  EXPECT_NEAR(static_cast<double>(kLarge) / (far.ns * 1e-9), model.rates().roceBytesPerS, 0.01 * 20e9);
  EXPECT_EQ(near.algorithm, "p2p");
  EXPECT_EQ(model.price(Collective::kAllToAll, kLarge, t).algorithm, "hierarchical(mesh,pairwise)");
}

TEST(CollectiveModel, SingleRankCostsNothing) {
  const CollectiveModel model;
  EXPECT_EQ(model.price(Collective::kAllReduce, kLarge, topology(1, 8)).ns, 0u);
  EXPECT_EQ(topology(1, 8).serverCount(), 1);
  EXPECT_EQ(topology(64, 8).serverCount(), 8);
  EXPECT_EQ(topology(10, 8).serverCount(), 2);
}

TEST(CollectiveModel, OverlapHidesTwoThirdsOfTheShorterPhase) {
  // pto-isa's fused GEMM + all-reduce on 8 910B: 371.6 us + 437.3 us in sequence, 560.6 us overlapped.
  const double compute = 371.6e-6, communication = 437.3e-6;
  EXPECT_NEAR(compute + exposedCommunicationSeconds(communication, compute), 560.6e-6, 1.0e-6);
  // A short collective behind a long GEMM still shows a third of itself.
  EXPECT_NEAR(exposedCommunicationSeconds(100e-6, 1000e-6), 100e-6 * (1 - 0.668), 1e-9);
  // Nothing to hide behind: all of it shows; nothing to send: nothing shows.
  EXPECT_DOUBLE_EQ(exposedCommunicationSeconds(200e-6, 0), 200e-6);
  EXPECT_DOUBLE_EQ(exposedCommunicationSeconds(0, 1e-3), 0);
  EXPECT_DOUBLE_EQ(exposedCommunicationSeconds(-1, 1e-3), 0);
}
