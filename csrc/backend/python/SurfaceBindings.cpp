#include "SurfaceBindings.h"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/NpuErrors.h"
#include "backend/SparseTensors.h"
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
  // Whether the runtime has started (its device list and settings frozen).
  m.def("_runtime_started", []() { return Runtime::existing() != nullptr; });
}

}  // namespace npusim::backend
