// Placement fidelity: where the real stack would run each operator call, and
// what torch_npu shows for it (the CPU-fallback warning, strict mode, dtype
// errors), plus the record of synchronization points for the report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <c10/core/ScalarType.h>

#include "runtime/PlacementTable.h"

namespace npusim::backend {

struct OperatorRecord;

// The placement data of the selected release line, loaded on first use from
// the package's data directory (NPUSIM_DATA_DIR overrides it).
const runtime::PlacementTable& placementTable();

// The dtype bit of the placement files for a ScalarType; -1 if it has none.
int dtypeBit(c10::ScalarType type) noexcept;

// Everything the executor learned about one call that placement depends on.
struct CallFacts {
  int firstDtype = -1;              // dtype bit of the first tensor argument
  runtime::DtypeMask allDtypes = 0;  // every tensor argument's dtype bit
  runtime::DtypeMask indexDtypes = 0;  // dtypes of the "indices" tensors
  runtime::DtypeMask deviceDtypes = 0;  // dtypes of the npu tensors that hold data (not scalars)
  std::string_view rejectedArgument;  // the first argument whose dtype the release line rejects
  c10::ScalarType rejectedType = c10::ScalarType::Undefined;
};

struct PlacementDecision {
  runtime::Placement placement;
  bool sync;
};

// Decides the placement of one call and shows what torch_npu shows: raises
// the strict-mode error or the unsupported-dtype error, or warns (once per
// operator) about a CPU fallback. Counts the call.
PlacementDecision decidePlacement(OperatorRecord& record, const CallFacts& facts);

// TORCH_NPU_WARNING_DISABLE=1 (or the deprecated TORCH_NPU_DISABLED_WARNING).
bool npuWarningsDisabled();

// The dtype an npu tensor converted with .to(dtype) gets: torch_npu replaces
// float64 by float32 and warns once (the release line's dtype table).
c10::ScalarType dtypeAfterCast(c10::ScalarType requested);

// A synchronization point: the host waited for the device because of
// `what` (an operator name or an API such as "Tensor.cpu()"). The sync debug
// mode warns or refuses it, except for an explicit device-wide wait
// (torch.npu.synchronize(), which torch_npu's mode does not judge, as CUDA's).
void recordSyncPoint(std::string_view what, bool explicitDeviceWait = false);

struct PlacementReport {
  struct OperatorCounts {
    std::string name;
    uint64_t aiCore = 0, aiCpu = 0, cpuFallback = 0;
    uint64_t deviceNs = 0;  // modelled device time
  };
  struct Fallback {
    std::string name;
    uint64_t calls = 0;
    std::string firstSource;
  };
  struct SyncPoint {
    std::string what;
    std::string source;
    uint64_t count = 0;
  };
  std::string releaseLine;
  std::vector<OperatorCounts> operators;
  std::vector<Fallback> fallbacks;
  std::vector<SyncPoint> syncPoints;
};

PlacementReport placementReport();
void resetPlacementReport();

}  // namespace npusim::backend
