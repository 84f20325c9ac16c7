// The time of HCCL collectives: an alpha-beta model of the Ascend server
// topologies and of the algorithms HCCL picks on them.
//
// Figures (../shared/reference/ascend-hardware.md §1, §3.3, §5):
// - 910B server (Atlas 800T A2): 8 NPUs in an HCCS full mesh. The measured
//   8-NPU all-reduce bus bandwidth is ~126 GB/s and all-gather ~130 GB/s
//   (limulidae, torch.distributed fp32); 2- and 4-card groups reach
//   18 / 45 GB/s all-reduce bus bandwidth. All three fit one effective
//   peer-link rate of 126 / 7 = 18 GB/s per direction (of ~28 GB/s nominal):
//   a full-mesh collective of n NPUs drives n-1 links at once.
// - 910A server (Atlas 800-9000): two 4-NPU HCCS full meshes (3 x 240 Gbps
//   links per chip) joined over PCIe (~28 GB/s). The HCCS links are derated
//   by the 910B's measured/nominal ratio (18/28), as is PCIe.
// - Between servers: one RoCE port per NPU, 200GE ~ 25 GB/s per direction
//   nominal, 10-25 GB/s achieved in practice; 20 GB/s is used.
// - Latency: alpha ~ 10-30 us per step [U]; 10 us per full-mesh phase inside a
//   server, 15 us per step over RoCE.
// Algorithms (CANN HCCL user guide hcclug_000116): full mesh inside a server
// (all-reduce = reduce-scatter + all-gather, O(1) steps); across servers ring
// when the server count is not a power of two, otherwise recursive
// halving-doubling; multi-server all-reduce is hierarchical (intra
// reduce-scatter, inter all-reduce, intra all-gather). Messages larger than
// HCCL_BUFFSIZE go in chunks, each paying the latency again.
#pragma once

#include <cstdint>
#include <string>

namespace npusim::perf {

enum class Collective {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,
  kBarrier,
  kGather,
  kScatter,
};

const char* collectiveName(Collective op) noexcept;

enum class ServerKind {
  k910B,  // one 8-NPU HCCS full mesh
  k910A,  // two 4-NPU full meshes over PCIe
};

// Where the ranks of a communicator sit.
struct CollectiveTopology {
  ServerKind server = ServerKind::k910B;
  int worldSize = 1;
  int ranksPerServer = 8;  // LOCAL_WORLD_SIZE, or the rank table's server size
  uint64_t bufferBytes = 200ull << 20;  // HCCL_BUFFSIZE (MB) in bytes

  int serverCount() const noexcept;
};

// Link rates and latencies (bytes per second, nanoseconds); the defaults are
// the figures cited above.
struct InterconnectRates {
  double hccsLinkBytesPerS = 18e9;        // 910B effective per peer link and direction
  double hccs910ALinkBytesPerS = 30e9 * 18.0 / 28.0;  // 240 Gbps, derated as the 910B
  double pcieBytesPerS = 28e9 * 18.0 / 28.0;
  double roceBytesPerS = 20e9;
  uint64_t intraPhaseLatencyNs = 10'000;
  uint64_t interStepLatencyNs = 15'000;
};

struct CollectiveCost {
  uint64_t ns = 0;
  std::string algorithm;  // e.g. "mesh", "hierarchical(mesh+ring)"
  double busBandwidthFactor = 1.0;  // nccl-tests convention: busbw = algbw * factor
  // Bus bandwidth in bytes per second for `bytes` moved in `ns`.
  double busBandwidth(uint64_t bytes) const noexcept;
};

// The time a collective adds when it runs alongside compute on the same
// chip: MC2's fused collective + GEMM kernels (npu_all_gather_base_mm,
// npu_mm_reduce_scatter_base), Megatron's asynchronous all-gather or
// reduce-scatter behind a GEMM of the backward, a data-parallel gradient
// reduction behind the last backward. Overlap hides only part of the shorter
// of the two (calibration::kComputeCommunicationOverlap, measured on 8 910B
// NPUs): communication - overlap x min(communication, compute), never below 0.
double exposedCommunicationSeconds(double communicationSeconds, double computeSeconds) noexcept;

class CollectiveModel {
 public:
  explicit CollectiveModel(InterconnectRates rates = {}) : rates_(rates) {}

  // `bytes` is the size of one rank's full buffer: the all-reduced tensor,
  // the all-gather output, the reduce-scatter input, the all-to-all input,
  // the broadcast tensor, the message of a send. `peerSameServer` is for
  // send/recv only.
  CollectiveCost price(Collective op, uint64_t bytes, const CollectiveTopology& topology,
                       bool peerSameServer = true) const;

  const InterconnectRates& rates() const noexcept { return rates_; }

 private:
  // One full-mesh phase (reduce-scatter or all-gather) in a group of `n` over
  // links of `linkRate`: every NPU moves bytes*(n-1)/n over n-1 links at once.
  uint64_t meshPhase(uint64_t bytes, int n, double linkRate) const;
  // An intra-server phase on the server kind (910A: two meshes over PCIe).
  uint64_t intraPhase(uint64_t bytes, const CollectiveTopology& topology, std::string& algorithm) const;
  // One inter-server phase (reduce-scatter or all-gather) of `bytes` among
  // `servers`, over each NPU's RoCE port.
  uint64_t interPhase(uint64_t bytes, int servers, std::string& algorithm) const;
  uint64_t chunks(uint64_t bytes, const CollectiveTopology& topology) const noexcept;

  InterconnectRates rates_;
};

}  // namespace npusim::perf
