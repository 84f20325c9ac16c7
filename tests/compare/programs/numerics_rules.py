"""One operator per numerics rule of the simulated NPU, each on fresh inputs (so that no
difference is inherited): an fp32 matmul with HF32 on, a conversion to float64, an fp16 product
that overflows (saturation mode when INF_NAN_MODE_FORCE_DISABLE=1) and torch_npu's fused
attention."""

import torch
import torch_npu

torch.manual_seed(0)
x = torch.randn(16, 32)
w = torch.randn(32, 24)
torch.npu.matmul.allow_hf32 = True
product = x.npu() @ w.npu()
torch.npu.matmul.allow_hf32 = False
wide = x.npu().double()
big = torch.full((8,), 60000.0, dtype=torch.float16).npu()
overflow = big * 2
q, k, v = (torch.randn(2, 16, 64).npu() for _ in range(3))
attention = torch_npu.npu_fusion_attention(q, k, v, 4, "BSH", scale=0.25)[0]
print(product.sum().item(), wide.dtype, overflow.float().max().item(), attention.sum().item())
