// Random number generators of the npu devices.
//
// Each npu device has a default generator. Operators run the CPU kernels, so
// the generator's state *is* a CPU generator's state: an NpuGenerator wraps
// one and hands it to the kernel. Seeded alike, npu and CPU draw the same
// numbers, which is what makes npusim results comparable with a CPU run.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace npusim::backend {

class NpuGenerator final : public c10::GeneratorImpl {
 public:
  explicit NpuGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // The generator a CPU kernel receives in place of this one.
  const at::Generator& cpuGenerator() const { return cpu_; }

 private:
  NpuGenerator* clone_impl() const override;
  at::Generator cpu_;
};

// The default generator of `device` (created on first use).
const at::Generator& defaultNpuGenerator(c10::DeviceIndex device);

// The CPU generator a kernel should use for `generator` (an npu generator, or
// undefined for the default generator of `device`).
at::Generator cpuGeneratorFor(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

}  // namespace npusim::backend
