// npusim._C._empty_strided_npu(size, stride, dtype): the buffer allocation of
// compiled (Inductor) wrappers, as torch._C._dynamo.guards._empty_strided_cpu
// and _empty_strided_cuda are for CPU and CUDA. A compiled step allocates
// dozens of buffers; torch.empty_strided pays the Python argument parser and
// the dispatcher on each (about half a microsecond), this pays neither.
//
// Same result as torch.empty_strided(size, stride, dtype=dtype, device="npu"):
// the current device, its current stream, the caching allocator (pools,
// statistics, OOM, profiler reports) and the deterministic fill, through the
// kernel's own emptyStridedOnCurrentDevice (NpuEmpty.h).
// Like the CPU and CUDA fast paths it records no aten::empty_strided event
// in torch.profiler and is not seen by dispatch modes.
#include <Python.h>

#include <c10/util/SmallVector.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuEmpty.h"

namespace py = pybind11;

namespace npusim::backend {
namespace {

// A tuple (or list) of Python ints, as the wrapper writes them.
void unpackSizes(PyObject* object, const char* what, c10::SmallVector<int64_t, 8>& out) {
  TORCH_CHECK_TYPE(PyTuple_Check(object) || PyList_Check(object), "_empty_strided_npu(): ", what,
                   " must be a tuple of ints, not ", Py_TYPE(object)->tp_name);
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(object);
  PyObject** items = PySequence_Fast_ITEMS(object);
  out.resize(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    const Py_ssize_t value = PyNumber_AsSsize_t(items[i], PyExc_OverflowError);
    if (value == -1 && PyErr_Occurred()) throw python_error();
    out[static_cast<size_t>(i)] = static_cast<int64_t>(value);
  }
}

PyObject* emptyStridedNpu(PyObject* /*module*/, PyObject* args) {
  HANDLE_TH_ERRORS
  TORCH_CHECK_TYPE(PyTuple_GET_SIZE(args) == 3, "_empty_strided_npu() takes 3 arguments (size, stride, dtype), got ",
                   PyTuple_GET_SIZE(args));
  c10::SmallVector<int64_t, 8> sizes;
  c10::SmallVector<int64_t, 8> strides;
  unpackSizes(PyTuple_GET_ITEM(args, 0), "size", sizes);
  unpackSizes(PyTuple_GET_ITEM(args, 1), "stride", strides);
  PyObject* dtype = PyTuple_GET_ITEM(args, 2);
  TORCH_CHECK_TYPE(THPDtype_Check(dtype), "_empty_strided_npu(): dtype must be a torch.dtype, not ",
                   Py_TYPE(dtype)->tp_name);
  const c10::ScalarType scalarType = reinterpret_cast<THPDtype*>(dtype)->scalar_type;
  torch::utils::device_lazy_init(at::kPrivateUse1);
  // The GIL stays held, as in the CPU and CUDA fast paths: releasing and
  // retaking it would cost more than the allocation, and nothing under the
  // caching allocator waits for another Python thread.
  return THPVariable_Wrap(emptyStridedOnCurrentDevice(sizes, strides, scalarType));
  END_HANDLE_TH_ERRORS
}

PyMethodDef fastEmptyMethods[] = {
    {"_empty_strided_npu", emptyStridedNpu, METH_VARARGS, "Allocation of compiled wrappers (size, stride, dtype)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void registerFastEmptyBinding(py::module& m) {
  if (PyModule_AddFunctions(m.ptr(), fastEmptyMethods) != 0) throw python_error();
}

}  // namespace npusim::backend
