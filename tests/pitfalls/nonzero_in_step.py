"""Pitfall: nonzero (a data-dependent output size) inside the step makes the host wait for the
device every time, and runs on the AI CPU."""
import torch

activations = torch.randn(64, 32, device="npu")
for step in range(3):
    active = torch.nonzero(activations > 0.5)  # PITFALL sync torch.nonzero(activations > 0.5) (aten::nonzero)
    activations = activations * 0.9
