"""Pitfall: reading the loss with .item() every step synchronizes host and device each time."""
import torch

model = torch.nn.Linear(8, 1).npu()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
history = []
for step in range(4):
    loss = model(torch.randn(16, 8, device="npu")).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())  # PITFALL sync loss.item()
