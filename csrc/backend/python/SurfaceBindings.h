// npusim._C entry points of the torch_npu surface added after the core
// module: allocator settings at run time, stream checks, interprocess events.
#pragma once

#include <pybind11/pybind11.h>

namespace npusim::backend {

void registerSurfaceBindings(pybind11::module_& m);

}  // namespace npusim::backend
