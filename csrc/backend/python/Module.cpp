// npusim._C: the functions the Python package (torch.npu) needs from the
// backend and the runtime. Thin: every function validates through the
// runtime and raises torch_npu's errors.
#include <unistd.h>

#include <algorithm>

#include <ATen/ops/from_blob.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/pybind.h>

#include "FormatBindings.h"
#include "SurfaceBindings.h"
#include "backend/device/HostRegistration.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/NpuGenerator.h"
#include "backend/device/NpuStreams.h"
#include "backend/device/NpuTrace.h"
#include "backend/executor/OperatorExecutor.h"
#include "backend/executor/UnboxedExecutor.h"
#include "backend/numerics/Hf32Mode.h"
#include "backend/timing/CoreLimits.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorPlacement.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "backend/timing/SourceLocation.h"
#include "backend/timing/SyncDebugMode.h"
#include "runtime/HostAllocator.h"
#include "runtime/Runtime.h"

namespace py = pybind11;

namespace npusim::backend {
namespace {

using runtime::Runtime;

Runtime& rt() {
  Runtime* runtime = nullptr;
  NPUSIM_TRANSLATE_ERRORS(runtime = &Runtime::instance());
  return *runtime;
}

void checkDevice(int device) { NPUSIM_TRANSLATE_ERRORS(rt().registry().checkDevice(device, "aclrtSetDevice")); }

py::dict statDict(const runtime::Stat& stat) {
  py::dict d;
  d["current"] = stat.current;
  d["peak"] = stat.peak;
  d["allocated"] = stat.allocated;
  d["freed"] = stat.freed;
  return d;
}

py::list statList(const std::array<runtime::Stat, 3>& stats) {
  py::list l;
  for (const auto& s : stats) l.append(statDict(s));
  return l;
}

py::dict memoryStats(int device) {
  runtime::MemoryStats s;
  NPUSIM_TRANSLATE_ERRORS(s = rt().allocator(device).stats());
  py::dict d;
  d["allocation"] = statList(s.allocation);
  d["segment"] = statList(s.segment);
  d["active"] = statList(s.active);
  d["inactive_split"] = statList(s.inactive_split);
  d["allocated_bytes"] = statList(s.allocated_bytes);
  d["reserved_bytes"] = statList(s.reserved_bytes);
  d["active_bytes"] = statList(s.active_bytes);
  d["inactive_split_bytes"] = statList(s.inactive_split_bytes);
  d["requested_bytes"] = statList(s.requested_bytes);
  d["oversize_allocations"] = statDict(s.oversize_allocations);
  d["oversize_segments"] = statDict(s.oversize_segments);
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  d["num_sync_all_streams"] = s.num_sync_all_streams;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  d["max_split_size"] = s.max_split_size;
  return d;
}

py::dict chipInfo() {
  const auto& chip = rt().chip();
  py::dict d;
  d["soc_name"] = chip.socName;
  d["npu_smi_name"] = chip.npuSmiName;
  d["soc_version_id"] = chip.socVersionId;
  d["chip_family"] = chip.chipFamily;
  d["cube_cores"] = chip.cubeCores;
  d["vector_cores"] = chip.vectorCores;
  d["ai_cpu_cores"] = chip.aiCpuCores;
  d["cube_frequency_mhz"] = chip.cubeFrequencyMhz;
  d["peak_fp16_flops"] = chip.peakFp16Flops();
  d["hbm_bytes"] = chip.hbmBytes;
  d["total_memory_bytes"] = rt().deviceCapacity();
  d["hbm_bandwidth_gbps"] = chip.hbmBandwidthGbps;
  d["l2_cache_bytes"] = chip.l2CacheBytes;
  d["pcie_bandwidth_gbps"] = chip.pcieBandwidthGbps;
  d["device_capability"] = chip.deviceCapability;
  d["physical_device_count"] = rt().registry().physicalDeviceCount();
  return d;
}

// Paths whose frames are library code, not the user's (torch, npusim, the
// importlib/runpy machinery); set by the Python package at import.
std::vector<std::string>& libraryPathPrefixes() {
  static auto* prefixes = new std::vector<std::string>();
  return *prefixes;
}

std::string userSourceLocation() {
  if (!Py_IsInitialized()) return {};
  const PyGILState_STATE gil = PyGILState_Ensure();
  std::string location;
  PyFrameObject* frame = PyThreadState_GetFrame(PyThreadState_Get());
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const std::string filename = file != nullptr ? file : "";
    Py_DECREF(code);
    bool library = filename.empty() || filename.rfind("<frozen", 0) == 0;
    for (const auto& prefix : libraryPathPrefixes()) {
      if (filename.rfind(prefix, 0) == 0) library = true;
    }
    if (!library) {
      location = filename + ":" + std::to_string(PyFrame_GetLineNumber(frame));
      Py_DECREF(frame);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return location;
}

// The sync as the user wrote it, from npusim._sync_labels (bytecode of the
// user's frame); the plain location if that fails.
SyncDescription describeSyncFromPython() {
  if (!Py_IsInitialized()) return {};
  const PyGILState_STATE gil = PyGILState_Ensure();
  SyncDescription sync;
  bool described = false;
  PyObject* module = PyImport_ImportModule("npusim._sync_labels");
  if (module != nullptr) {
    PyObject* result = PyObject_CallMethod(module, "describe", nullptr);
    if (result != nullptr && PyTuple_Check(result) && PyTuple_Size(result) == 3) {
      const char* location = PyUnicode_AsUTF8(PyTuple_GetItem(result, 0));
      const char* label = PyUnicode_AsUTF8(PyTuple_GetItem(result, 1));
      if (location != nullptr && label != nullptr) {
        sync.location = location;
        sync.label = label;
        sync.sameCall = PyObject_IsTrue(PyTuple_GetItem(result, 2)) == 1;
        described = true;
      }
    }
    Py_XDECREF(result);
    Py_DECREF(module);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  if (!described) sync.location = userSourceLocation();
  return sync;
}

py::dict placementReportDict() {
  const PlacementReport report = placementReport();
  py::dict d;
  d["release_line"] = report.releaseLine;
  py::dict operators;
  for (const auto& op : report.operators) {
    py::dict counts;
    counts["ai_core"] = op.aiCore;
    counts["ai_cpu"] = op.aiCpu;
    counts["cpu_fallback"] = op.cpuFallback;
    counts["device_ns"] = op.deviceNs;
    operators[py::str(op.name)] = counts;
  }
  d["operators"] = operators;
  py::list fallbacks;
  for (const auto& fallback : report.fallbacks) {
    py::dict f;
    f["operator"] = fallback.name;
    f["calls"] = fallback.calls;
    f["first_source"] = fallback.firstSource;
    fallbacks.append(f);
  }
  d["fallbacks"] = fallbacks;
  py::list syncs;
  for (const auto& sync : report.syncPoints) {
    py::dict s;
    s["what"] = sync.what;
    s["source"] = sync.source;
    s["count"] = sync.count;
    syncs.append(s);
  }
  d["sync_points"] = syncs;
  return d;
}

}  // namespace
}  // namespace npusim::backend

namespace npusim::backend {
void registerRobustnessBindings(py::module& m);  // RobustnessBindings.cpp
void registerMemPoolBindings(py::module& m);     // MemPoolBindings.cpp
void registerFastEmptyBinding(py::module& m);    // FastEmptyBinding.cpp
void registerMemoryHistoryBindings(py::module& m);  // MemoryHistoryBindings.cpp
}

PYBIND11_MODULE(_C, m) {
  npusim::backend::registerRobustnessBindings(m);
  npusim::backend::registerMemPoolBindings(m);
  npusim::backend::registerFastEmptyBinding(m);
  npusim::backend::registerMemoryHistoryBindings(m);
  using namespace npusim::backend;
  using npusim::runtime::Runtime;
  m.doc() = "npusim backend: the simulated Ascend NPU behind torch.npu";
  // The unboxed kernels first: the route then leaves the operators they took.
  registerUnboxedExecutor();
  routeCpuKernelsThroughExecutor();
  m.def("_set_unboxed_executor", [](bool enabled) { setUnboxedExecutorEnabled(enabled); });
  m.def("_unboxed_executor", []() { return unboxedExecutorEnabled(); });
  setSourceLocator(&userSourceLocation);
  setSyncDescriber(&describeSyncFromPython);
  m.def("_set_library_paths", [](const std::vector<std::string>& prefixes) { libraryPathPrefixes() = prefixes; });
  m.def("_enter_estimate_only", torch::wrap_pybind_function([]() { NPUSIM_TRANSLATE_ERRORS(enterEstimateOnly()); }));
  m.def("_exit_estimate_only", torch::wrap_pybind_function([]() { NPUSIM_TRANSLATE_ERRORS(exitEstimateOnly()); }));
  m.def("_estimate_only", []() { return estimateOnly(); });
  m.def("_timing_totals", torch::wrap_pybind_function([]() {
          const TimingTotals totals = timingTotals();
          static const char* kUnits[] = {"cube", "vector", "ai_cpu", "cpu_fallback", "transfer", "other"};
          py::dict byUnit;
          for (size_t i = 0; i < totals.deviceNsByUnit.size(); ++i) byUnit[kUnits[i]] = totals.deviceNsByUnit[i];
          py::dict d;
          d["device_ns_by_unit"] = byUnit;
          d["cube_flops"] = totals.cubeFlops;
          d["host_dispatch_ns"] = totals.hostDispatchNs;
          d["launches"] = totals.launches;
          d["host_start_ns"] = totals.hostStartNs;
          d["host_now_ns"] = rt().hostClock().now();
          d["peak_fp16_flops"] = rt().chip().peakFp16Flops();
          return d;
        }));
  m.def("_reset_timing_totals", torch::wrap_pybind_function([]() { resetTimingTotals(); }));
  m.def("_placement_report", torch::wrap_pybind_function([]() { return placementReportDict(); }));
  m.def("_reset_placement_report", torch::wrap_pybind_function([]() { resetPlacementReport(); }));

  m.def("_device_count", []() -> int {
    try {
      return Runtime::visibleDeviceCount();
    } catch (...) {
      return 0;
    }
  });
  m.def("_init", torch::wrap_pybind_function([]() {
          auto& runtime = rt();
          torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
          NPUSIM_TRANSLATE_ERRORS(runtime.setDevice(runtime.currentDevice()));
        }));
  m.def("_is_initialized", []() {
    const Runtime* runtime = Runtime::existing();
    for (int d = 0; runtime != nullptr && d < runtime->deviceCount(); ++d) {
      if (runtime->isDeviceInitialized(d)) return true;
    }
    return false;
  });
  m.def("_is_device_initialized", [](int device) {
    const Runtime* runtime = Runtime::existing();
    return runtime != nullptr && runtime->isDeviceInitialized(device);
  });
  m.def("_is_in_bad_fork", []() { return torch::utils::is_device_in_bad_fork(at::kPrivateUse1); });
  m.def("_set_interactive", [](bool interactive) { setInteractiveSession(interactive); });
  m.def("_get_device", torch::wrap_pybind_function([]() { return rt().currentDevice(); }));
  m.def("_set_device", torch::wrap_pybind_function([](int device) {
          NPUSIM_TRANSLATE_ERRORS(rt().setDevice(device));
        }));
  m.def("_exchange_device", torch::wrap_pybind_function([](int device) {
          auto& runtime = rt();
          const int previous = runtime.currentDevice();
          if (device >= 0 && device != previous) NPUSIM_TRANSLATE_ERRORS(runtime.setDevice(device));
          return previous;
        }));
  m.def("_synchronize", torch::wrap_pybind_function([](int device) {
          recordSyncPoint("torch.npu.synchronize()", /*explicitDeviceWait=*/true);
          {
            py::gil_scoped_release release;
            NPUSIM_TRANSLATE_ERRORS(rt().synchronizeDevice(device));
          }
          trace(TraceKind::kDeviceSynchronization);
        }));
  m.def("_get_device_properties", torch::wrap_pybind_function([](int device) {
          npusim::runtime::DeviceProperties p;
          NPUSIM_TRANSLATE_ERRORS(p = rt().properties(device));
          py::dict d;
          d["name"] = p.name;
          d["total_memory"] = p.totalMemory;
          d["cube_core_num"] = p.cubeCoreNum;
          d["vector_core_num"] = p.vectorCoreNum;
          d["L2_cache_size"] = p.l2CacheSize;
          d["uuid"] = p.uuid;
          d["physical_id"] = p.physicalId;
          return d;
        }));
  m.def("_chip_info", torch::wrap_pybind_function([]() { return chipInfo(); }));

  m.def("_current_stream", torch::wrap_pybind_function([](int device) {
          checkDevice(device);
          return currentStream(device);
        }));
  m.def("_default_stream", torch::wrap_pybind_function([](int device) {
          checkDevice(device);
          return static_cast<int64_t>(0);
        }));
  m.def("_set_stream", torch::wrap_pybind_function([](int device, int64_t stream) {
          NPUSIM_TRANSLATE_ERRORS(rt().timeline(device).streamPriority(stream));
          setCurrentStream(device, stream);
        }));
  m.def("_stream_from_pool", torch::wrap_pybind_function([](int device, bool high) {
          int64_t id = 0;
          NPUSIM_TRANSLATE_ERRORS(id = rt().timeline(device).streamFromPool(high));
          trace(TraceKind::kStreamCreation, static_cast<uintptr_t>(id));
          return id;
        }));
  m.def("_stream_priority", torch::wrap_pybind_function([](int device, int64_t stream) {
          int priority = 0;
          NPUSIM_TRANSLATE_ERRORS(priority = rt().timeline(device).streamPriority(stream));
          return priority;
        }));
  m.def("_timeline_info", torch::wrap_pybind_function([](int device) {
          auto& timeline = rt().timeline(device);
          py::dict d;
          d["host_ns"] = timeline.hostClock().now();
          d["device_ns"] = timeline.deviceClock();
          d["busy_ns"] = timeline.busyNs();
          return d;
        }));

  m.def("_memory_stats", torch::wrap_pybind_function([](int device) { return memoryStats(device); }));
  m.def("_reset_peak_memory_stats", torch::wrap_pybind_function([](int device) {
          NPUSIM_TRANSLATE_ERRORS(rt().allocator(device).resetPeakStats());
        }));
  m.def("_reset_accumulated_memory_stats", torch::wrap_pybind_function([](int device) {
          NPUSIM_TRANSLATE_ERRORS(rt().allocator(device).resetAccumulatedStats());
        }));
  m.def("_empty_cache", torch::wrap_pybind_function([]() {
          auto& runtime = rt();
          for (int d = 0; d < runtime.deviceCount(); ++d) {
            if (runtime.isDeviceInitialized(d)) NPUSIM_TRANSLATE_ERRORS(runtime.allocator(d).emptyCache());
          }
          runtime.publishStatus(true);
        }));
  m.def("_empty_virt_addr_cache", torch::wrap_pybind_function([]() {
          auto& runtime = rt();
          for (int d = 0; d < runtime.deviceCount(); ++d) {
            if (!runtime.isDeviceInitialized(d)) continue;
            auto& allocator = runtime.allocator(d);
            TORCH_CHECK(allocator.config().expandableSegments,
                        "Unsupported config for empty_virt_addr_cache, please enable expandable_segments.");
            NPUSIM_TRANSLATE_ERRORS(allocator.emptyVirtualAddressCache());
          }
          runtime.publishStatus(true);
        }));
  m.def("_set_memory_fraction", torch::wrap_pybind_function([](double fraction, int device) {
          NPUSIM_TRANSLATE_ERRORS(rt().allocator(device).setMemoryFraction(fraction));
        }));
  m.def("_get_memory_fraction", torch::wrap_pybind_function([](int device) {
          double fraction = 1.0;
          NPUSIM_TRANSLATE_ERRORS(fraction = rt().allocator(device).memoryFraction());
          return fraction;
        }));
  m.def("_mem_get_info", torch::wrap_pybind_function([](int device) {
          auto& runtime = rt();
          size_t reserved = 0;
          NPUSIM_TRANSLATE_ERRORS(reserved = runtime.allocator(device).reservedBytes());
          const uint64_t total = runtime.deviceCapacity();
          // Device memory the allocator does not reserve can still be taken: by AscendCL
          // allocations, or physical pages empty_virt_addr_cache kept.
          uint64_t free = total > reserved ? total - reserved : 0;
          NPUSIM_TRANSLATE_ERRORS(free = std::min<uint64_t>(free, runtime.memory(device).freeBytes()));
          return py::make_tuple(free, total);
        }));
  m.def("_caching_allocator_alloc", torch::wrap_pybind_function([](size_t size, int device, int64_t stream) {
          void* ptr = nullptr;
          NPUSIM_TRANSLATE_ERRORS(ptr = rt().allocator(device).allocate(size, stream));
          return reinterpret_cast<uintptr_t>(ptr);
        }));
  m.def("_caching_allocator_delete", torch::wrap_pybind_function([](uintptr_t ptr) {
          auto& runtime = rt();
          void* raw = reinterpret_cast<void*>(ptr);
          for (int d = 0; d < runtime.deviceCount(); ++d) {
            if (runtime.isDeviceInitialized(d) && runtime.memory(d).contains(raw)) {
              NPUSIM_TRANSLATE_ERRORS(runtime.allocator(d).free(raw));
              return;
            }
          }
          TORCH_CHECK(false, "caching_allocator_delete: ", raw, " was not allocated by the npu caching allocator");
        }));
  m.def("_host_memory_stats", torch::wrap_pybind_function([]() {
          npusim::runtime::HostMemoryStats s;
          NPUSIM_TRANSLATE_ERRORS(s = npusim::runtime::HostAllocator::instance().stats());
          py::dict d;
          d["allocations"] = statDict(s.allocations);
          d["allocated_bytes"] = statDict(s.allocated_bytes);
          d["reserved_bytes"] = statDict(s.reserved_bytes);
          d["num_host_alloc"] = s.num_host_alloc;
          d["num_host_free"] = s.num_host_free;
          return d;
        }));
  m.def("_host_empty_cache", torch::wrap_pybind_function([]() {
          NPUSIM_TRANSLATE_ERRORS(npusim::runtime::HostAllocator::instance().emptyCache());
        }));
  m.def("_host_allocator_expandable_segments", torch::wrap_pybind_function([]() {
          bool expandable = false;
          NPUSIM_TRANSLATE_ERRORS(expandable = npusim::runtime::HostAllocator::instance().expandableSegments());
          return expandable;
        }));
  m.def("_host_reset_peak_stats", torch::wrap_pybind_function([]() {
          NPUSIM_TRANSLATE_ERRORS(npusim::runtime::HostAllocator::instance().resetPeakStats());
        }));
  m.def("_host_reset_accumulated_stats", torch::wrap_pybind_function([]() {
          NPUSIM_TRANSLATE_ERRORS(npusim::runtime::HostAllocator::instance().resetAccumulatedStats());
        }));

  m.def("_default_generator", torch::wrap_pybind_function([](int device) {
          checkDevice(device);
          return py::reinterpret_steal<py::object>(
              THPGenerator_initDefaultGenerator(defaultNpuGenerator(static_cast<c10::DeviceIndex>(device))));
        }));

  m.def("_erase_stream", torch::wrap_pybind_function([](uintptr_t ptr, int device, int64_t stream) {
    NPUSIM_TRANSLATE_ERRORS(rt().allocator(device).eraseStream(reinterpret_cast<void*>(ptr), stream));
    trace(TraceKind::kEraseStream, ptr, static_cast<uintptr_t>(stream));
  }));
  // torch_npu.empty_with_swapped_memory: an npu tensor over host memory (the
  // chip maps it into the device's address space); `host` keeps it alive.
  m.def("_npu_tensor_over_host_memory", torch::wrap_pybind_function([](const at::Tensor& host, int device) {
    checkDevice(device);
    const c10::Device target(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
    return at::for_blob(host.data_ptr(), host.sizes())
        .strides(host.strides())
        .context(new at::Tensor(host), [](void* held) { delete static_cast<at::Tensor*>(held); })
        .target_device(target)
        .options(host.options().device(target))
        .make_tensor();
  }));
  m.def("_host_register", [](uintptr_t address, size_t bytes) { return registerHostMemory(address, bytes); });
  m.def("_host_unregister", [](uintptr_t address) { return unregisterHostMemory(address); });
  m.def("_set_core_limit_factors", [](int device, double cube, double vector) {
    setCoreLimitFactors(device, cube, vector);
  });
  m.def("_set_hf32", [](bool matmul, bool convolution) { setHf32(matmul, convolution); });
  m.def("_hf32_usage", []() {
    const Hf32Usage usage = hf32Usage();
    py::dict d;
    d["matmul_calls"] = usage.matmulCalls;
    d["convolution_calls"] = usage.convolutionCalls;
    return d;
  });
  m.def("_reset_hf32_usage", []() { resetHf32Usage(); });
  m.def("_set_sync_debug_mode", [](int mode) { setSyncDebugMode(mode); });
  m.def("_get_sync_debug_mode", []() { return syncDebugMode(); });
  registerSurfaceBindings(m);
  registerFormatBindings(m);
  m.def("_operator_counts", []() {
    py::dict d;
    for (const auto& [name, calls] : operatorCounts()) d[py::str(name)] = calls;
    return d;
  });
  m.def("_reset_operator_counts", []() { resetOperatorCounts(); });
}
