// npusim._C entry points of torch_npu's storage formats that need C++: the format in
// torch.save / torch.load (PyTorch's backend metadata of PrivateUse1 tensors) and
// torch_npu._C._weak_ref_tensor.
#pragma once

#include <pybind11/pybind11.h>

namespace npusim::backend {

void registerFormatBindings(pybind11::module_& m);

}  // namespace npusim::backend
