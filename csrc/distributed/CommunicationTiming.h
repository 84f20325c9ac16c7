// Puts HCCL collectives on the simulated timeline and keeps the totals the
// performance report shows (time, bytes, bus bandwidth per operation).
//
// A collective runs on the process group's HCCL stream: the stream first
// waits for the work already issued on the current stream (the inputs'
// producers, as torch_npu's syncStreams), then carries the modelled duration
// of the operation (csrc/perf CollectiveModel). Compute issued afterwards on
// the current stream overlaps it until someone waits on the Work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/CollectiveModel.h"
#include "runtime/Timeline.h"

namespace npusim::distributed {

struct CommunicationPlacement {
  int device = 0;
  runtime::StreamId hcclStream = 0;
  perf::CollectiveTopology topology;
};

// Charges one collective of `bytes` and returns the event that marks its end
// on the HCCL stream. `peerSameServer` matters for send/recv only.
runtime::Event chargeCollective(const CommunicationPlacement& placement, perf::Collective op, uint64_t bytes,
                                bool peerSameServer = true);

// The current stream of the placement's device waits for `done`; returns how
// long that stalled the stream (communication not hidden behind compute).
uint64_t waitOnCurrentStream(int device, const runtime::Event& done);

struct OperationTotals {
  std::string name;
  std::string algorithm;  // of the last call
  uint64_t calls = 0;
  uint64_t bytes = 0;
  uint64_t ns = 0;
  double busBandwidthBytesPerS = 0;  // of the largest call
  uint64_t largestBytes = 0;
};

struct CommunicationTotals {
  uint64_t ns = 0;         // modelled communication time, all operations
  uint64_t exposedNs = 0;  // stalls of compute streams in Work.wait
  uint64_t overlapNs = 0;  // communication while a compute stream of its device was busy
  bool overlapTruncated = false;  // too many intervals were recorded to count all
  uint64_t calls = 0;
  std::vector<OperationTotals> operations;
};

CommunicationTotals communicationTotals();
void resetCommunicationTotals();

}  // namespace npusim::distributed
