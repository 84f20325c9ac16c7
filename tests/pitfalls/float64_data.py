"""Pitfall: float64 data. torch_npu has no float64 kernels for most operators: converting an npu
tensor to float64 silently gives float32, with a one-time warning."""
import torch

features = torch.randn(32, 4, device="npu")
precise = features.to(torch.float64)  # PITFALL dtype float32
assert precise.dtype == torch.float32
