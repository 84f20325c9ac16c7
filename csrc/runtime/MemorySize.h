// Sizes in messages, as torch_npu prints them.
#pragma once

#include <cstdint>
#include <string>

namespace npusim::runtime {

// torch_npu's size formatter for messages: "512 bytes", "1.50 KiB",
// "20.00 MiB", "60.97 GiB" (two decimals, binary units).
std::string formatMemorySize(uint64_t bytes);

}  // namespace npusim::runtime
