#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void fused_scale_kernel(const float* __restrict__ input, float* __restrict__ output, float scale, int64_t n) {
  int64_t index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index < n) {
    float value = input[index];
    output[index] = value > 0.f ? value * scale : 0.f;
  }
}

torch::Tensor fused_scale_forward_cuda(torch::Tensor input, double scale) {
  auto output = torch::empty_like(input);
  int64_t n = input.numel();
  fused_scale_kernel<<<(n + 255) / 256, 256>>>(input.data_ptr<float>(), output.data_ptr<float>(), scale, n);
  return output;
}
