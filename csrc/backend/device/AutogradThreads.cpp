#include "backend/device/AutogradThreads.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/SavedTensorHooks.h>
#include <ATen/ThreadLocalPythonObjects.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/zeros.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <pthread.h>
#include <torch/csrc/autograd/autograd.h>

#include <atomic>
#include <cstring>

namespace npusim::backend {
namespace {

std::atomic<uint64_t> startedWorkers{0};
// Each thread looks at its name once: the engine names its workers before
// their first setDevice, and other threads never become workers later.
thread_local bool nameChecked = false;

// Clears the thread-local state that holds Python objects for the lifetime of
// one C++ backward, so that the graph task it captures owns none.
class WithoutPythonThreadState {
 public:
  WithoutPythonThreadState()
      : functionModes_(at::impl::PythonTorchFunctionTLS::get_state()),
        dispatchModes_(c10::impl::TorchDispatchModeTLS::get_state()),
        savedTensorHooks_(at::SavedTensorDefaultHooks::get_tls_state()),
        pythonObjects_(at::impl::ThreadLocalPythonObjects::get_state()) {
    at::impl::PythonTorchFunctionTLS::set_state(at::impl::PythonTorchFunctionTLS{});
    c10::impl::TorchDispatchModeTLS::set_state(c10::impl::TorchDispatchModeTLS{});
    at::SavedTensorDefaultHooks::set_tls_state(at::impl::SavedTensorDefaultHooksTLS{});
    at::impl::ThreadLocalPythonObjects::set_state(at::impl::ThreadLocalPythonObjects{});
  }
  ~WithoutPythonThreadState() {
    at::impl::PythonTorchFunctionTLS::set_state(functionModes_);
    c10::impl::TorchDispatchModeTLS::set_state(dispatchModes_);
    at::SavedTensorDefaultHooks::set_tls_state(savedTensorHooks_);
    at::impl::ThreadLocalPythonObjects::set_state(pythonObjects_);
  }
  WithoutPythonThreadState(const WithoutPythonThreadState&) = delete;
  WithoutPythonThreadState& operator=(const WithoutPythonThreadState&) = delete;

 private:
  at::impl::PythonTorchFunctionTLS functionModes_;
  c10::impl::TorchDispatchModeTLS dispatchModes_;
  at::impl::SavedTensorDefaultHooksTLS savedTensorHooks_;
  at::impl::ThreadLocalPythonObjects pythonObjects_;
};

}  // namespace

void noteDeviceThreadIfAutograd(int device) noexcept {
  if (nameChecked) return;
  nameChecked = true;
  if (device < 0 || device >= 64) return;
  char name[16] = {};
  if (::pthread_getname_np(::pthread_self(), name, sizeof name) != 0) return;
  if (std::strncmp(name, "pt_autograd_", 12) != 0) return;
  startedWorkers.fetch_or(uint64_t{1} << device, std::memory_order_relaxed);
}

uint64_t autogradDeviceThreads() noexcept { return startedWorkers.load(std::memory_order_relaxed); }

void drainAutogradDeviceThreads() noexcept {
  const uint64_t workers = autogradDeviceThreads();
  if (workers == 0) return;
  try {
    WithoutPythonThreadState noPython;
    at::AutoGradMode gradEnabled(true);
    for (int device = 0; device < 64; ++device) {
      if ((workers & (uint64_t{1} << device)) == 0) continue;
      // Tensors made here never get a Python object, so the worker's last
      // reference to them needs no GIL either.
      at::Tensor leaf = at::zeros({}, at::TensorOptions().device(c10::DeviceType::PrivateUse1, device))
                            .requires_grad_(true);
      torch::autograd::backward({at::mul(leaf, 1.0)});
    }
  } catch (...) {
  }
}

}  // namespace npusim::backend
