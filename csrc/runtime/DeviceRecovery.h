// torch_npu's recovery from device faults, the state the runtime keeps for it:
//  - the process-wide "unsafe data" check (torch_npu.npu._recovery's
//    set_npu_tensor_unsafe_check_flag): while it is on, every operator refuses
//    npu inputs whose memory the caching allocator marks unsafe;
//  - per device, the stopped state of torch_npu.npu.stop_device (its streams
//    set to STOP_EXIT and its tasks aborted): every task submitted to a
//    stopped device fails with "FORCE STOP" until restart_device.
// Both are off in almost every run, so the executor asks active() first: one
// relaxed atomic load per operator.
#pragma once

#include <atomic>
#include <cstdint>

namespace npusim::runtime {

class DeviceRecovery {
 public:
  // True when the unsafe-data check is on or any device is stopped.
  static bool active() noexcept { return state_.load(std::memory_order_relaxed) != 0; }

  static bool unsafeDataCheck() noexcept { return (state_.load(std::memory_order_acquire) & kUnsafeCheckBit) != 0; }
  static void setUnsafeDataCheck(bool enabled) noexcept;

  // Devices beyond the 63 the state can hold are never stopped (the runtime
  // simulates at most 16).
  static bool stopped(int device) noexcept;
  static void stop(int device) noexcept;
  static void restart(int device) noexcept;

 private:
  static constexpr uint64_t kUnsafeCheckBit = uint64_t{1} << 63;
  static uint64_t deviceBit(int device) noexcept {
    return device >= 0 && device < 63 ? uint64_t{1} << device : 0;
  }
  static std::atomic<uint64_t> state_;
};

}  // namespace npusim::runtime
