#include "FormatBindings.h"

#include <string>
#include <unordered_map>

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuErrors.h"

namespace py = pybind11;

namespace npusim::backend {
namespace {

// The storage format of npu tensors is kept by the Python face (npusim.npu.formats); a
// checkpoint carries it as torch_npu writes it, as keys of the tensor's metadata dict.
py::object formatsFunction(const char* name) {
  return py::module_::import("npusim.npu.formats").attr(name);
}

void serializeFormat(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  py::gil_scoped_acquire gil;
  for (const auto& key : formatsFunction("_serialization_entries")(tensor)) {
    metadata[key.cast<std::string>()] = true;
  }
}

void deserializeFormat(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  py::gil_scoped_acquire gil;
  py::list keys;
  for (const auto& entry : metadata) keys.append(entry.first);
  formatsFunction("_restore_serialized_format")(tensor, keys);
}

}  // namespace

void registerFormatBindings(py::module_& m) {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &serializeFormat, &deserializeFormat);
  // torch_npu._C._weak_ref_tensor: an npu tensor over the same memory, with the same geometry,
  // that does not keep the memory alive (vLLM-style graph inputs). Its user keeps the owner alive.
  m.def("_weak_ref_tensor", torch::wrap_pybind_function([](const at::Tensor& tensor) {
          TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1,
                      "_weak_ref_tensor expects an npu tensor, but got a tensor on ", tensor.device(),
                      errorSuffix(ErrorModule::kPta, ErrorKind::kInvalidParameter));
          const c10::Storage& storage = tensor.storage();
          const int64_t itemsize = static_cast<int64_t>(tensor.element_size());
          const int64_t elements = static_cast<int64_t>(storage.nbytes()) / itemsize;
          at::Tensor whole = at::for_blob(storage.mutable_data(), {elements})
                                 .options(tensor.options())
                                 .target_device(tensor.device())
                                 .make_tensor();
          return whole.as_strided(tensor.sizes(), tensor.strides(), tensor.storage_offset());
        }));
}

}  // namespace npusim::backend
