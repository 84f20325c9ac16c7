"""Pitfall: an operator without an NPU kernel inside the training loop falls back to the CPU
on every step (device-to-host and host-to-device copies each time)."""
import torch

weights = torch.randn(16, 8, device="npu", requires_grad=True)
optimizer = torch.optim.SGD([weights], lr=0.1)
for step in range(3):
    scores = torch.randn(4, 16, device="npu") @ weights
    smooth = torch.logcumsumexp(scores, dim=1)  # PITFALL cpu_fallback aten::_logcumsumexp
    loss = smooth.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
