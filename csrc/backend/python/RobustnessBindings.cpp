// npusim._C functions for process-level robustness: draining the autograd
// device workers before interpreter exit, and the state behind torch_npu's
// recovery from device faults (torch_npu.npu._recovery, stop/restart_device).
#include <torch/csrc/utils/pybind.h>

#include "backend/device/AutogradThreads.h"
#include "backend/device/NpuErrors.h"
#include "runtime/DeviceRecovery.h"
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

  using runtime::DeviceRecovery;
  m.def("_set_npu_data_unsafe_flag", [](bool flag) { DeviceRecovery::setUnsafeDataCheck(flag); });
  m.def("_get_npu_data_unsafe_flag", []() { return DeviceRecovery::unsafeDataCheck(); });
  m.def("_mark_all_npu_data_unsafe", [](int device) {
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().allocator(device).markAllBlocksUnsafe());
  });
  // The allocation starting at `ptr` on `device` (a storage's data pointer).
  m.def("_npu_data_is_safe", [](int device, uintptr_t ptr) {
    bool safe = true;
    NPUSIM_TRANSLATE_ERRORS(safe = runtime::Runtime::instance().allocator(device).isBlockSafe(
                                reinterpret_cast<const void*>(ptr)));
    return safe;
  });
  m.def("_mark_npu_data_safe", [](int device, uintptr_t ptr) {
    NPUSIM_TRANSLATE_ERRORS(
        runtime::Runtime::instance().allocator(device).markBlockSafe(reinterpret_cast<const void*>(ptr)));
  });
  m.def("_npu_stop_device", [](int device) {
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().registry().checkDevice(device, "aclrtDeviceTaskAbort"));
    DeviceRecovery::stop(device);
  });
  m.def("_npu_restart_device", [](int device) {
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().registry().checkDevice(device, "aclrtSetDevice"));
    DeviceRecovery::restart(device);
  });
  m.def("_npu_device_stopped", [](int device) { return DeviceRecovery::stopped(device); });
}

}  // namespace npusim::backend
