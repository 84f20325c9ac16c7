"""Single-GPU training with automatic mixed precision (float16 autocast + GradScaler)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

# Falls back to the CPU so that the same script runs on a laptop.
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MLP(nn.Module):
    def __init__(self, width: int = 32):
        super().__init__()
        self.fc1 = nn.Linear(16, width)
        self.fc2 = nn.Linear(width, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device.type)
    inputs = torch.randn(args.steps, 8, 16)
    targets = torch.randint(0, 4, (args.steps, 8))
    for step in range(args.steps):
        x = inputs[step].to(device, non_blocking=True)
        y = targets[step].cuda() if torch.cuda.is_available() else targets[step]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16):
            logits = model(x)
        # The loss in float32, outside autocast, as the AMP recipe recommends.
        with torch.cuda.amp.autocast(enabled=False):
            loss = F.cross_entropy(logits.float(), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(f"LOSS {step} {loss.item()!r}")


if __name__ == "__main__":
    main()
