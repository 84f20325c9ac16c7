// npusim._distributed_C: the hccl process group and the collective model for
// the Python face (npusim.distributed). Kept out of npusim._C so that a
// program that never touches torch.distributed does not load c10d's bindings.
#include <algorithm>

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuErrors.h"
#include "distributed/CommunicationTiming.h"
#include "distributed/DeferredRelease.h"
#include "distributed/ProcessGroupHCCL.h"
#include "perf/CollectiveModel.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

namespace py = pybind11;
using npusim::distributed::ProcessGroupHCCL;

namespace {

npusim::perf::Collective collectiveByName(const std::string& name) {
  using npusim::perf::Collective;
  for (Collective op : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce, Collective::kAllGather,
                        Collective::kReduceScatter, Collective::kAllToAll, Collective::kSendRecv, Collective::kBarrier,
                        Collective::kGather, Collective::kScatter}) {
    if (name == npusim::perf::collectiveName(op)) return op;
  }
  throw py::value_error("unknown collective '" + name + "'");
}

py::dict totalsAsDict() {
  const auto totals = npusim::distributed::communicationTotals();
  py::dict out;
  out["ns"] = totals.ns;
  out["exposed_ns"] = totals.exposedNs;
  out["calls"] = totals.calls;
  out["overlap_ns"] = totals.overlapNs;
  out["overlap_truncated"] = totals.overlapTruncated;
  py::list operations;
  for (const auto& op : totals.operations) {
    py::dict entry;
    entry["name"] = op.name;
    entry["algorithm"] = op.algorithm;
    entry["calls"] = op.calls;
    entry["bytes"] = op.bytes;
    entry["ns"] = op.ns;
    entry["largest_bytes"] = op.largestBytes;
    entry["bus_bandwidth_bytes_per_s"] = op.busBandwidthBytesPerS;
    operations.append(entry);
  }
  out["operations"] = operations;
  return out;
}

}  // namespace

PYBIND11_MODULE(_distributed_C, m) {
  // c10d's Python types (Backend, Store, Work) must be registered first.
  py::module::import("torch.distributed");

  py::class_<ProcessGroupHCCL, c10d::Backend, c10::intrusive_ptr<ProcessGroupHCCL>>(m, "ProcessGroupHCCL")
      .def(py::init([](const c10::intrusive_ptr<c10d::Backend>& gloo, int rank, int size,
                       std::chrono::milliseconds execTimeout, bool blockingWait, int ranksPerServer, bool server910A,
                       uint64_t bufferBytes) {
             ProcessGroupHCCL::Config config;
             config.execTimeout = execTimeout;
             config.blockingWait = blockingWait;
             config.ranksPerServer = ranksPerServer;
             config.server910A = server910A;
             config.bufferBytes = bufferBytes;
             return c10::make_intrusive<ProcessGroupHCCL>(gloo, rank, size, config);
           }),
           py::arg("gloo"), py::arg("rank"), py::arg("size"), py::arg("exec_timeout"), py::arg("blocking_wait"),
           py::arg("ranks_per_server"), py::arg("server_910a"), py::arg("buffer_bytes"))
      .def_property_readonly("ranks_per_server", [](const ProcessGroupHCCL& pg) { return pg.config().ranksPerServer; })
      .def_property_readonly("exec_timeout", [](const ProcessGroupHCCL& pg) { return pg.config().execTimeout; })
      .def_property_readonly("gloo", &ProcessGroupHCCL::glooBackend)
      .def("set_watchdog_status", &ProcessGroupHCCL::setWatchdogStatus, py::arg("status"))
      .def("clear_workmeta_list", &ProcessGroupHCCL::clearWorkMetaList);

  // HCCL variables that only tune real hardware are noted in the plog (module HCCL).
  m.def("_plog", [](int level, const std::string& message) {
    NPUSIM_PLOG(static_cast<npusim::runtime::LogLevel>(std::clamp(level, 0, 3)), "HCCL", message);
  });
  m.def("_communication_totals", &totalsAsDict);
  // At exit, while the interpreter is whole (npusim.distributed registers it with atexit).
  m.def("_release_deferred", []() {
    py::gil_scoped_release noGil;
    npusim::distributed::releaseDeferred();
  });
  m.def("_reset_communication_totals", &npusim::distributed::resetCommunicationTotals);
  m.def(
      "_price_collective",
      [](const std::string& op, uint64_t bytes, int worldSize, int ranksPerServer, bool server910A,
         uint64_t bufferBytes, bool peerSameServer) {
        npusim::perf::CollectiveTopology topology;
        topology.server = server910A ? npusim::perf::ServerKind::k910A : npusim::perf::ServerKind::k910B;
        topology.worldSize = worldSize;
        topology.ranksPerServer = ranksPerServer;
        topology.bufferBytes = bufferBytes;
        const auto cost = npusim::perf::CollectiveModel().price(collectiveByName(op), bytes, topology, peerSameServer);
        return py::make_tuple(cost.ns, cost.algorithm, cost.busBandwidth(bytes));
      },
      py::arg("op"), py::arg("bytes"), py::arg("world_size"), py::arg("ranks_per_server") = 8,
      py::arg("server_910a") = false, py::arg("buffer_bytes") = 200ull << 20, py::arg("peer_same_server") = true);
  m.def("_exposed_communication", &npusim::perf::exposedCommunicationSeconds, py::arg("communication_s"),
        py::arg("compute_s"));
}
