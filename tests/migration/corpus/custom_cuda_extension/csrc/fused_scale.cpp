#include <torch/extension.h>

torch::Tensor fused_scale_forward_cuda(torch::Tensor input, double scale);

// y = relu(x) * scale, fused in one kernel.
torch::Tensor fused_scale_forward(torch::Tensor input, double scale) {
  TORCH_CHECK(input.is_cuda(), "input must be a CUDA tensor");
  return fused_scale_forward_cuda(input, scale);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &fused_scale_forward, "fused relu and scale (CUDA)");
}

TORCH_LIBRARY(fused_scale, m) {
  m.def("scale_relu(Tensor x, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(fused_scale, CUDA, m) {
  m.impl("scale_relu", &fused_scale_forward);
}
