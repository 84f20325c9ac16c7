#include "backend/SourceLocation.h"

#include <atomic>

namespace npusim::backend {
namespace {
std::atomic<SourceLocator> installedLocator{nullptr};
}

void setSourceLocator(SourceLocator locator) noexcept { installedLocator.store(locator); }

std::string currentSourceLocation() {
  const SourceLocator locator = installedLocator.load();
  return locator != nullptr ? locator() : std::string();
}

}  // namespace npusim::backend
