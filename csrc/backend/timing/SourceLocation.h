// The user's source line that caused what the backend is doing (a CPU
// fallback, a synchronization), for npusim's placement report.
//
// The backend has no Python in it; the Python bindings install the locator,
// which takes the GIL and walks the interpreter's frames to the innermost one
// outside torch and npusim. Without a locator the location is "".
#pragma once

#include <string>

namespace npusim::backend {

using SourceLocator = std::string (*)();
void setSourceLocator(SourceLocator locator) noexcept;
std::string currentSourceLocation();

// A synchronization as the user wrote it: where, what (e.g. "Tensor.__bool__",
// "Tensor.tolist", "torch.save"; empty when unknown), and whether it belongs
// to the same library call as the previous one (torch.save of a state dict
// syncs once per tensor but is one call).
struct SyncDescription {
  std::string location;
  std::string label;
  bool sameCall = false;
};
using SyncDescriber = SyncDescription (*)();
void setSyncDescriber(SyncDescriber describer) noexcept;
// Without a describer: the locator's location, no label.
SyncDescription describeCurrentSync();

}  // namespace npusim::backend
