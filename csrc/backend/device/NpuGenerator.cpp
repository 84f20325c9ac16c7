#include "backend/device/NpuGenerator.h"

#include <array>
#include <mutex>

#include <ATen/core/GeneratorForPrivateuseone.h>

#include "backend/device/NpuStreams.h"
#include "runtime/Runtime.h"

namespace npusim::backend {

NpuGenerator::NpuGenerator(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      cpu_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

void NpuGenerator::set_current_seed(uint64_t seed) { cpu_.set_current_seed(seed); }

void NpuGenerator::set_offset(uint64_t offset) { cpu_.set_offset(offset); }

uint64_t NpuGenerator::get_offset() const { return cpu_.get_offset(); }

uint64_t NpuGenerator::current_seed() const { return cpu_.current_seed(); }

uint64_t NpuGenerator::seed() { return cpu_.seed(); }

void NpuGenerator::set_state(const c10::TensorImpl& state) { cpu_.unsafeGetGeneratorImpl()->set_state(state); }

c10::intrusive_ptr<c10::TensorImpl> NpuGenerator::get_state() const {
  return cpu_.unsafeGetGeneratorImpl()->get_state();
}

NpuGenerator* NpuGenerator::clone_impl() const {
  auto* copy = new NpuGenerator(device().index());
  copy->cpu_ = cpu_.clone();
  return copy;
}

const at::Generator& defaultNpuGenerator(c10::DeviceIndex device) {
  static std::array<at::Generator, kMaxDevices> generators;
  static std::array<std::once_flag, kMaxDevices> created;
  const int count = runtime::Runtime::instance().deviceCount();
  TORCH_CHECK(device >= 0 && device < count, "Invalid device index ", static_cast<int>(device),
              " for an npu generator; the process sees ", count, " npu devices");
  std::call_once(created[static_cast<size_t>(device)], [device] {
    auto generator = at::make_generator<NpuGenerator>(device);
    // Same initial seed as torch.cuda's default generators: set by manual_seed
    // or seeded from entropy by torch's initial seeding, as for CPU.
    generators[static_cast<size_t>(device)] = std::move(generator);
  });
  return generators[static_cast<size_t>(device)];
}

at::Generator cpuGeneratorFor(const std::optional<at::Generator>& generator, c10::DeviceIndex device) {
  const at::Generator& source = generator.has_value() && generator->defined() ? *generator : defaultNpuGenerator(device);
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "Expected a 'npu' device type for generator but found '", source.device().type(), "'");
  return static_cast<const NpuGenerator*>(source.unsafeGetGeneratorImpl())->cpuGenerator();
}

}  // namespace npusim::backend
