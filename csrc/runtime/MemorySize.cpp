#include "runtime/MemorySize.h"

#include <cstdio>

namespace npusim::runtime {

std::string formatMemorySize(uint64_t bytes) {
  char text[64];
  if (bytes <= 1024) {
    std::snprintf(text, sizeof(text), "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (bytes <= 1048576) {
    std::snprintf(text, sizeof(text), "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes <= 1073741824ULL) {
    std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return text;
}

}  // namespace npusim::runtime
