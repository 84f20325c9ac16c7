"""Uses the fused_scale CUDA extension when it is built, else the same computation in PyTorch."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

try:
    import fused_scale_cuda  # built by `python setup.py install`
except ImportError:
    fused_scale_cuda = None

CUDA_SOURCE = """
__global__ void add_one_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
"""


def build_inline_extension():
    # Only on a machine with nvcc; the training below does not need it.
    return load_inline(
        name="add_one_ext",
        cpp_sources="void add_one(torch::Tensor t);",
        cuda_sources=CUDA_SOURCE,
        functions=["add_one"],
    )


def fused_scale(x, scale):
    if fused_scale_cuda is not None and x.is_cuda:
        return fused_scale_cuda.forward(x, scale)
    return torch.relu(x) * scale


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    layer = nn.Linear(6, 6).to(device)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.01)
    for step in range(3):
        x = torch.full((2, 6), 0.5 * (step + 1), device=device)
        loss = fused_scale(layer(x), 2.0).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"LOSS {step} {loss.item()!r}")


if __name__ == "__main__":
    main()
