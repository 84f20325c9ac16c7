"""Train, checkpoint, and resume from the checkpoint with map_location (as after a GPU job)."""
import os
import sys

import torch
import torch.nn as nn

use_cuda = torch.cuda.is_available()
device = "cuda:0" if use_cuda else "cpu"


def train(model, optimizer, steps, offset):
    for step in range(steps):
        x = torch.linspace(-1, 1, 12, device=device).reshape(4, 3) * (step + offset + 1)
        loss = (model(x) - 1).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"LOSS {step + offset} {loss.item()!r}")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    path = os.path.join(folder, "checkpoint.pt")
    torch.manual_seed(0)
    model = nn.Linear(3, 2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    train(model, optimizer, 2, 0)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)

    # Resume on "the first GPU", whichever GPU the checkpoint was written on.
    location = {"cuda:1": "cuda:0"} if use_cuda else "cpu"
    state = torch.load(path, map_location=location)
    restored = nn.Linear(3, 2).to(device)
    restored.load_state_dict(state["model"])
    restored_optimizer = torch.optim.Adam(restored.parameters(), lr=0.01)
    restored_optimizer.load_state_dict(state["optimizer"])
    assert next(restored.parameters()).is_cuda == use_cuda
    host_copy = torch.load(path, map_location=torch.device("cpu"))
    assert host_copy["model"]["weight"].device.type == "cpu"
    train(restored, restored_optimizer, 2, 2)


if __name__ == "__main__":
    main()
