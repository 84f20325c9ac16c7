#include "SurfaceBindings.h"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuErrors.h"
#include "backend/device/NpuTrace.h"
#include "backend/families/FftPlanCache.h"
#include "backend/layouts/SparseTensors.h"
#include "backend/layouts/StorageRedirect.h"
#include "runtime/Runtime.h"

namespace py = pybind11;

namespace npusim::backend {
namespace {

// The trace's sink: runs npusim.npu._npu_trace._fire(kind, first, second, name) under the GIL,
// which runs the callbacks registered in torch_npu.utils._npu_trace. A callback's exception is
// reported as unraisable (a trace event cannot fail the operation that caused it).
void firePythonCallbacks(TraceKind kind, uintptr_t first, uintptr_t second, const char* name) {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  py::gil_scoped_acquire gil;
  try {
    // Leaked on purpose: a py::object must not be destroyed after the interpreter is gone.
    static auto* fire = new py::object(py::module_::import("npusim.npu._npu_trace").attr("_fire"));
    (*fire)(static_cast<int>(kind), first, second, name != nullptr ? py::object(py::str(name)) : py::none());
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("npusim NPU trace callback");
  }
}

}  // namespace

void registerSurfaceBindings(py::module_& m) {
  using runtime::Runtime;
  routeSparseKernelsThroughExecutor();
  // torch.npu.memory._set_allocator_settings: new settings for every device
  // allocator (torch_npu's _npu_npuCachingAllocator_set_allocator_settings).
  m.def("_set_allocator_settings", torch::wrap_pybind_function([](const std::string& settings) {
          NPUSIM_TRANSLATE_ERRORS(Runtime::instance().setAllocatorSettings(settings));
        }));
  // Streams: torch_npu's id encoding lives in the runtime's timeline.
  m.def("_is_valid_stream", torch::wrap_pybind_function([](int device, int64_t stream) {
          bool valid = false;
          NPUSIM_TRANSLATE_ERRORS(valid = Runtime::instance().timeline(device).isValidStream(stream));
          return valid;
        }));
  m.def("_sync_launch_stream", torch::wrap_pybind_function([](int device) {
          int64_t id = 0;
          NPUSIM_TRANSLATE_ERRORS(id = Runtime::instance().timeline(device).syncLaunchStream());
          return id;
        }));
  m.def("_stream_is_sync_launch", torch::wrap_pybind_function([](int device, int64_t stream) {
          bool sync = false;
          NPUSIM_TRANSLATE_ERRORS(sync = Runtime::instance().timeline(device).isSyncLaunch(stream));
          return sync;
        }));
  // torch_npu.npu_change_data_ptr: dst's storage uses src's memory from byte `offset` on.
  m.def("_redirect_storage", torch::wrap_pybind_function([](const at::Tensor& dst, const at::Tensor& src,
                                                             int64_t offset) {
          NPUSIM_TRANSLATE_ERRORS(redirectStorage(dst, src, offset));
        }));
  // torch.npu.backends.fft_plan_cache (torch_npu's _npu_*_fft_plan_cache bindings).
  m.def("_fft_plan_cache_size", []() { return fftPlanCacheSize(); });
  m.def("_fft_plan_cache_max_size", []() { return fftPlanCacheCapacity(); });
  m.def("_set_fft_plan_cache_max_size", torch::wrap_pybind_function([](int64_t size) {
          setFftPlanCacheCapacity(size);
        }));
  m.def("_clear_fft_plan_cache", []() { clearFftPlanCache(); });
  // torch_npu's Event.recorded_time(): waits for the event, then its simulated completion time
  // in microseconds since the device started (aclrtEventGetTimestamp's unit).
  m.def("_event_recorded_time_us", torch::wrap_pybind_function([](uintptr_t eventId) {
          TORCH_CHECK(eventId != 0, "Event must be recorded before getting recorded timestamp.",
                      errorSuffix(ErrorModule::kPta, ErrorKind::kInternalError));
          const auto& event = *reinterpret_cast<const runtime::Event*>(eventId);
          TORCH_CHECK(event.recorded, "Event must be recorded before getting recorded timestamp.",
                      errorSuffix(ErrorModule::kPta, ErrorKind::kInternalError));
          NPUSIM_TRANSLATE_ERRORS(Runtime::instance().timeline(event.device).synchronizeEvent(event));
          return static_cast<uint64_t>(event.time / 1000);
        }));
  // torch_npu._C._activate_npu_trace(mode): 0 streams, events and memory; 1 kernels.
  m.def("_activate_npu_trace", torch::wrap_pybind_function([](int mode) {
          TORCH_CHECK(mode == 0 || mode == 1, "npu trace mode must be 0 (stream) or 1 (kernel), got ", mode,
                      errorSuffix(ErrorModule::kPta, ErrorKind::kInvalidValue));
          activateTrace(static_cast<TraceMode>(mode), &firePythonCallbacks);
        }));
  // Whether the runtime has started (its device list and settings frozen).
  m.def("_runtime_started", []() { return Runtime::existing() != nullptr; });
}

}  // namespace npusim::backend
