// npusim._C functions for process-level robustness: draining the autograd
// device workers before interpreter exit.
#include <torch/csrc/utils/pybind.h>

#include "backend/device/AutogradThreads.h"
#include "runtime/Runtime.h"

namespace py = pybind11;

namespace npusim::backend {

void registerRobustnessBindings(py::module& m) {
  // The runtime's own record of a bad fork: set also when a device was
  // initialized by C++ code that did not go through torch.npu's lazy init.
  m.def("_runtime_in_forked_child", []() { return runtime::Runtime::inForkedChild(); });
  m.def("_autograd_device_threads", []() {
    py::list devices;
    const uint64_t mask = autogradDeviceThreads();
    for (int d = 0; d < 64; ++d) {
      if (mask & (uint64_t{1} << d)) devices.append(d);
    }
    return devices;
  });
  m.def("_drain_autograd_device_threads", []() {
    py::gil_scoped_release noGil;
    drainAutogradDeviceThreads();
  });
}

}  // namespace npusim::backend
