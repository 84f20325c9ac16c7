"""A CPU-only program: nothing to migrate ("accuracy" and "discuss" are not device names)."""
import torch
import torch.nn as nn

from helpers import make_data


def main():
    torch.manual_seed(0)
    model = nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = make_data()
    for step in range(3):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"LOSS {step} {loss.item()!r}")
    metrics = {"accuracy": 1.0, "discuss": "cudaless"}
    assert len(metrics) == 2


if __name__ == "__main__":
    main()
