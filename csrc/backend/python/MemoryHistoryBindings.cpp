// npusim._C entry points of the caching allocator's snapshot and allocation
// history, named as torch_npu's _C names them: _npu_record_memory_history,
// _npu_isHistoryEnabled and _npu_memorySnapshot (the dict of "segments" and
// "device_traces" that torch.npu.memory._snapshot returns and
// pytorch.org/memory_viz reads). Stacks are PyTorch's CapturedTraceback,
// captured by the allocator only while history is on and symbolized here,
// with the GIL held, when a snapshot is taken.
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuErrors.h"
#include "runtime/CachingAllocator.h"
#include "runtime/Runtime.h"

namespace py = pybind11;

// libtorch_python's symbolizer of captured tracebacks (declared in
// torch/csrc/profiler/python/combined_traceback.h, a header that needs
// nlohmann/json, which the torch wheel does not ship): a list of frame dicts
// ({"name", "filename", "line"}) per traceback.
namespace torch {
std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
void freeDeadCapturedTracebackFrames();  // needs the GIL
}  // namespace torch

namespace npusim::backend {
namespace {

// The runtime keeps stacks opaque; this is what the backend puts in them.
struct CapturedStack final : runtime::StackContext {
  std::shared_ptr<torch::CapturedTraceback> traceback;
};

runtime::StackRecorder stackRecorder(bool withCpp) {
  return [withCpp]() -> std::shared_ptr<runtime::StackContext> {
    auto stack = std::make_shared<CapturedStack>();
    // Python and TorchScript frames always; C++ frames for stacks="all".
    stack->traceback = torch::CapturedTraceback::gather(true, true, withCpp);
    return stack;
  };
}

void checkOption(const std::string& option, std::initializer_list<const char*> valid, const char* message) {
  for (const char* candidate : valid) {
    if (option == candidate) return;
  }
  TORCH_CHECK(false, message, errorSuffix(ErrorModule::kPta, ErrorKind::kResourceNotFound));
}

void recordMemoryHistory(std::optional<std::string> enabled, std::optional<std::string> context,
                         const std::string& stacks, size_t maxEntries) {
  if (enabled) checkOption(*enabled, {"state", "all"}, "expected state to be 'state', 'all', or None");
  if (context) {
    checkOption(*context, {"state", "alloc", "all"}, "expected context to be 'state', 'alloc', 'all', or None");
  }
  checkOption(stacks, {"python", "all"}, "expected stacks to be 'python', or 'all'");
  // "state" keeps only the live blocks' stacks: the ring holds one entry.
  if (!(enabled && *enabled == "all")) maxEntries = 1;
  runtime::RecordContext when = runtime::RecordContext::kNever;
  if (context == "state") when = runtime::RecordContext::kState;
  if (context == "alloc") when = runtime::RecordContext::kAlloc;
  if (context == "all") when = runtime::RecordContext::kAll;
  NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().recordAllocationHistory(
      enabled.has_value(), stackRecorder(stacks == "all"), maxEntries, when));
}

// Collects the stacks a snapshot refers to and symbolizes them in one batch
// (repeated stacks are symbolized once), then sets each "frames" key.
class FrameFiller {
 public:
  void request(py::dict& dict, const std::shared_ptr<runtime::StackContext>& stack, bool emptyWhenNone) {
    auto* captured = dynamic_cast<CapturedStack*>(stack.get());
    if (captured != nullptr && captured->traceback) {
      tracebacks_.push_back(captured->traceback.get());
      destinations_.push_back(dict);
    } else if (emptyWhenNone) {
      dict["frames"] = py::list();
    }
  }

  void fill() {
    if (tracebacks_.empty()) return;
    std::vector<py::object> frames = torch::py_symbolize(tracebacks_);
    for (size_t i = 0; i < frames.size(); ++i) destinations_[i]["frames"] = frames[i];
  }

 private:
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::dict> destinations_;
};

py::tuple poolTuple(runtime::MempoolId id) { return py::make_tuple(id.first, id.second); }

py::list segmentList(const std::vector<runtime::SegmentInfo>& snapshot, FrameFiller& frames) {
  py::list segments;
  for (const auto& segment : snapshot) {
    py::dict s;
    s["device"] = segment.device;
    s["address"] = segment.address;
    s["total_size"] = segment.total_size;
    s["allocated_size"] = segment.allocated_size;
    s["active_size"] = segment.active_size;
    s["requested_size"] = segment.requested_size;
    s["stream"] = segment.stream;
    s["segment_type"] = segment.is_large ? "large" : "small";
    s["segment_pool_id"] = poolTuple(segment.pool);
    s["is_expandable"] = segment.is_expandable;
    frames.request(s, segment.stack, true);
    py::list blocks;
    uintptr_t address = segment.address;
    for (const auto& block : segment.blocks) {
      py::dict b;
      b["address"] = address;
      b["size"] = block.size;
      b["requested_size"] = block.requested_size;
      b["state"] = block.allocated ? "active_allocated" : (block.active ? "active_pending_free" : "inactive");
      frames.request(b, block.stack, true);
      blocks.append(b);
      address += block.size;
    }
    s["blocks"] = blocks;
    segments.append(s);
  }
  return segments;
}

py::list traceList(const std::vector<runtime::TraceEntry>& entries, FrameFiller& frames) {
  py::list trace;
  for (const auto& entry : entries) {
    py::dict e;
    e["action"] = runtime::traceActionName(entry.action);
    // An "oom" entry carries the bytes the device still had free instead of an address.
    e[entry.action == runtime::TraceAction::kOom ? "device_free" : "addr"] = entry.addr;
    e["size"] = entry.size;
    e["stream"] = entry.stream;
    e["pool_id"] = poolTuple(entry.pool);
    e["time_us"] = entry.timeUs;
    frames.request(e, entry.stack, false);
    trace.append(e);
  }
  return trace;
}

// {"segments": [...], "device_traces": [[...] per device]}; with a pool id
// other than (0, 0) only that pool's segments.
py::dict memorySnapshot(std::optional<runtime::MempoolId> poolFilter) {
  torch::freeDeadCapturedTracebackFrames();
  auto& rt = runtime::Runtime::instance();
  FrameFiller frames;
  py::list segments;
  py::list traces;
  for (int device = 0; device < rt.deviceCount(); ++device) {
    if (!rt.isDeviceInitialized(device)) {
      traces.append(py::list());
      continue;
    }
    std::vector<runtime::SegmentInfo> snapshot;
    std::vector<runtime::TraceEntry> entries;
    NPUSIM_TRANSLATE_ERRORS({
      auto& allocator = rt.allocator(device);
      snapshot = allocator.snapshot();
      entries = allocator.trace();
    });
    if (poolFilter && *poolFilter != runtime::kDefaultMempool) {
      std::erase_if(snapshot, [&](const runtime::SegmentInfo& segment) { return segment.pool != *poolFilter; });
    }
    for (auto segment : segmentList(snapshot, frames)) segments.append(segment);
    traces.append(traceList(entries, frames));
  }
  frames.fill();
  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = traces;
  return result;
}

}  // namespace

void registerMemoryHistoryBindings(py::module& m) {
  m.def("_npu_record_memory_history", torch::wrap_pybind_function(recordMemoryHistory), py::arg("enabled"),
        py::arg("context"), py::arg("stacks"), py::arg("max_entries"));
  m.def("_npu_isHistoryEnabled", torch::wrap_pybind_function([] {
          return runtime::Runtime::instance().allocationHistoryEnabled();
        }));
  m.def("_npu_memorySnapshot", torch::wrap_pybind_function([](std::optional<runtime::MempoolId> pool) {
          return memorySnapshot(pool);
        }),
        py::arg("mempool_id") = py::none());
  // The segments alone (torch.npu.memory_snapshot), every device's.
  m.def("_memory_snapshot", torch::wrap_pybind_function([]() -> py::object {
          py::dict snapshot = memorySnapshot(std::nullopt);
          return snapshot["segments"];
        }));
}

}  // namespace npusim::backend
