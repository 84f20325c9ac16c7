#include "backend/timing/SourceLocation.h"

#include <atomic>

namespace npusim::backend {
namespace {
std::atomic<SourceLocator> installedLocator{nullptr};
std::atomic<SyncDescriber> installedDescriber{nullptr};
}  // namespace

void setSyncDescriber(SyncDescriber describer) noexcept { installedDescriber.store(describer); }

SyncDescription describeCurrentSync() {
  const SyncDescriber describer = installedDescriber.load();
  if (describer != nullptr) return describer();
  return SyncDescription{currentSourceLocation(), {}, false};
}

void setSourceLocator(SourceLocator locator) noexcept { installedLocator.store(locator); }

std::string currentSourceLocation() {
  const SourceLocator locator = installedLocator.load();
  return locator != nullptr ? locator() : std::string();
}

}  // namespace npusim::backend
