#include "perf/CollectiveModel.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "perf/Calibration.h"

namespace npusim::perf {
namespace {

constexpr int k910AMeshSize = 4;

uint64_t transferNs(double bytes, double bytesPerS) noexcept {
  return bytes <= 0 ? 0 : static_cast<uint64_t>(std::llround(bytes / bytesPerS * 1e9));
}

bool isPowerOfTwo(int value) noexcept { return value > 0 && std::has_single_bit(static_cast<unsigned>(value)); }

}  // namespace

double exposedCommunicationSeconds(double communicationSeconds, double computeSeconds) noexcept {
  const double comm = std::max(0.0, communicationSeconds), compute = std::max(0.0, computeSeconds);
  return std::max(0.0, comm - calibration::kComputeCommunicationOverlap * std::min(comm, compute));
}

const char* collectiveName(Collective op) noexcept {
  switch (op) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kAllGather: return "allgather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllToAll: return "alltoall";
    case Collective::kSendRecv: return "send_recv";
    case Collective::kBarrier: return "barrier";
    case Collective::kGather: return "gather";
    case Collective::kScatter: return "scatter";
  }
  return "collective";
}

int CollectiveTopology::serverCount() const noexcept {
  const int perServer = std::max(1, std::min(ranksPerServer, worldSize));
  return std::max(1, (worldSize + perServer - 1) / perServer);
}

double CollectiveCost::busBandwidth(uint64_t bytes) const noexcept {
  if (ns == 0) return 0.0;
  return static_cast<double>(bytes) / (static_cast<double>(ns) * 1e-9) * busBandwidthFactor;
}

uint64_t CollectiveModel::meshPhase(uint64_t bytes, int n, double linkRate) const {
  if (n <= 1) return 0;
  // bytes*(n-1)/n leave each NPU, split evenly over its n-1 links.
  return rates_.intraPhaseLatencyNs + transferNs(static_cast<double>(bytes) / n, linkRate);
}

uint64_t CollectiveModel::intraPhase(uint64_t bytes, const CollectiveTopology& topology,
                                     std::string& algorithm) const {
  const int n = std::max(1, std::min(topology.ranksPerServer, topology.worldSize));
  if (n == 1) return 0;  // one rank per server: nothing moves inside it
  if (topology.server == ServerKind::k910B) {
    algorithm = "mesh";
    return meshPhase(bytes, n, rates_.hccsLinkBytesPerS);
  }
  const int groupSize = std::min(n, k910AMeshSize);
  const int groups = (n + k910AMeshSize - 1) / k910AMeshSize;
  uint64_t ns = meshPhase(bytes, groupSize, rates_.hccs910ALinkBytesPerS);
  algorithm = "mesh";
  if (groups > 1) {
    // After the in-group phase, each NPU exchanges its share with its
    // counterparts in the other group(s) over PCIe.
    ns += rates_.intraPhaseLatencyNs +
          transferNs(static_cast<double>(bytes) * (groups - 1) / n, rates_.pcieBytesPerS);
    algorithm = "mesh+pcie";
  }
  return ns;
}

uint64_t CollectiveModel::interPhase(uint64_t bytes, int servers, std::string& algorithm) const {
  if (servers <= 1) return 0;
  const double moved = static_cast<double>(bytes) * (servers - 1) / servers;
  if (isPowerOfTwo(servers)) {
    algorithm = "halving-doubling";
    const int steps = std::countr_zero(static_cast<unsigned>(servers));
    return steps * rates_.interStepLatencyNs + transferNs(moved, rates_.roceBytesPerS);
  }
  algorithm = "ring";
  return (servers - 1) * rates_.interStepLatencyNs + transferNs(moved, rates_.roceBytesPerS);
}

uint64_t CollectiveModel::chunks(uint64_t bytes, const CollectiveTopology& topology) const noexcept {
  if (topology.bufferBytes == 0) return 1;
  return std::max<uint64_t>(1, (bytes + topology.bufferBytes - 1) / topology.bufferBytes);
}

CollectiveCost CollectiveModel::price(Collective op, uint64_t bytes, const CollectiveTopology& topology,
                                      bool peerSameServer) const {
  CollectiveCost cost;
  const int world = std::max(1, topology.worldSize);
  const int local = std::max(1, std::min(topology.ranksPerServer, world));
  const int servers = topology.serverCount();
  switch (op) {
    case Collective::kAllReduce: case Collective::kAllGather: case Collective::kReduceScatter:
      cost.busBandwidthFactor = op == Collective::kAllReduce ? 2.0 * (world - 1) / world
                                                            : static_cast<double>(world - 1) / world;
      break;
    case Collective::kAllToAll: cost.busBandwidthFactor = static_cast<double>(world - 1) / world; break;
    default: break;
  }
  if (world == 1 && op != Collective::kSendRecv) {
    cost.algorithm = "local";
    return cost;
  }
  // Large messages go through the communicator buffer in chunks.
  const uint64_t chunkCount = chunks(op == Collective::kBarrier ? 0 : bytes, topology);
  const uint64_t chunk = (bytes + chunkCount - 1) / chunkCount;

  std::string intraAlgorithm, interAlgorithm;
  uint64_t perChunk = 0;
  switch (op) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:   // scatter + all-gather
    case Collective::kReduce:      // reduce-scatter + gather
    case Collective::kBarrier: {   // an all-reduce of one element
      const uint64_t size = op == Collective::kBarrier ? 4 : chunk;
      // Intra reduce-scatter, inter all-reduce of the 1/local share, intra all-gather.
      perChunk = 2 * intraPhase(size, topology, intraAlgorithm) + 2 * interPhase(size / local, servers, interAlgorithm);
      break;
    }
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kGather:
    case Collective::kScatter:
      perChunk = intraPhase(chunk, topology, intraAlgorithm) + interPhase(chunk / local, servers, interAlgorithm);
      break;
    case Collective::kAllToAll: {
      // Pairwise: the share for ranks of this server over HCCS, the rest over RoCE.
      const double block = static_cast<double>(chunk) / world;
      if (local > 1) {
        perChunk += rates_.intraPhaseLatencyNs + transferNs(block, topology.server == ServerKind::k910B
                                                                       ? rates_.hccsLinkBytesPerS
                                                                       : rates_.hccs910ALinkBytesPerS);
        intraAlgorithm = "mesh";
      }
      if (servers > 1) {
        perChunk += (servers - 1) * rates_.interStepLatencyNs + transferNs(block * (world - local), rates_.roceBytesPerS);
        interAlgorithm = "pairwise";
      }
      break;
    }
    case Collective::kSendRecv:
      if (peerSameServer) {
        perChunk = rates_.intraPhaseLatencyNs + transferNs(static_cast<double>(chunk),
                                                           topology.server == ServerKind::k910B
                                                               ? rates_.hccsLinkBytesPerS
                                                               : rates_.hccs910ALinkBytesPerS);
        intraAlgorithm = "p2p";
      } else {
        perChunk = rates_.interStepLatencyNs + transferNs(static_cast<double>(chunk), rates_.roceBytesPerS);
        interAlgorithm = "p2p";
      }
      break;
  }
  cost.ns = perChunk * chunkCount;
  if (!intraAlgorithm.empty() && !interAlgorithm.empty()) {
    cost.algorithm = "hierarchical(" + intraAlgorithm + "," + interAlgorithm + ")";
  } else {
    cost.algorithm = intraAlgorithm.empty() ? interAlgorithm : intraAlgorithm;
  }
  return cost;
}

}  // namespace npusim::perf
