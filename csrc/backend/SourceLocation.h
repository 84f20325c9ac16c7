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

}  // namespace npusim::backend
