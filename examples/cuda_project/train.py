"""Trains the classifier on a GPU with mixed precision and writes a checkpoint.

    python train.py            # on a CUDA machine
"""
import os

import torch
import torch.nn.functional as F

from model import Classifier

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def main(steps: int = 5):
    torch.manual_seed(0)
    model = Classifier().cuda() if torch.cuda.is_available() else Classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
    data = torch.randn(steps, 32, 20)
    labels = torch.randint(0, 4, (steps, 32))
    for step in range(steps):
        x, y = data[step].to(device, non_blocking=True), labels[step].to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=device.type != "cpu"):
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(f"step {step}: loss {loss.item():.4f}")
    if torch.cuda.is_available():
        print(f"peak memory: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB on {torch.cuda.get_device_name()}")
    path = os.path.join(os.environ.get("CHECKPOINT_DIR", "."), "classifier.pt")
    torch.save(model.state_dict(), path)
    state = torch.load(path, map_location="cuda:0" if torch.cuda.is_available() else "cpu")
    model.load_state_dict(state)


if __name__ == "__main__":
    main()
