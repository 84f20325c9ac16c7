#include "SurfaceBindings.h"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuErrors.h"
#include "backend/layouts/SparseTensors.h"
#include "backend/layouts/StorageRedirect.h"
#include "runtime/Runtime.h"

namespace py = pybind11;

namespace npusim::backend {

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
  // Whether the runtime has started (its device list and settings frozen).
  m.def("_runtime_started", []() { return Runtime::existing() != nullptr; });
}

}  // namespace npusim::backend
