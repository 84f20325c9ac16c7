"""Pitfall: boolean-mask indexing (x[mask]) has a data-dependent output size: it runs on the AI CPU
and the host waits for the device."""
import torch

values = torch.randn(128, device="npu")
for step in range(2):
    mask = values > 0
    positive = values[mask]  # PITFALL sync values[mask] (aten::index.Tensor)
