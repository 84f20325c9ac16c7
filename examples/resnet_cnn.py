"""A small ResNet-style CNN trained for a few steps on synthetic images.

Runs on the simulated NPU by default (``--device npu``); ``--device cpu`` runs
the same program on the CPU, and both print the same losses.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, channels_in: int, channels_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or channels_in != channels_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels_in, channels_out, 1, stride=stride, bias=False), nn.BatchNorm2d(channels_out)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.Sequential(
            BasicBlock(width, width), BasicBlock(width, 2 * width, stride=2), BasicBlock(2 * width, 4 * width, stride=2)
        )
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class Trainer:
    """The example's training state and its loop body: one step per call to :meth:`step`."""

    def __init__(self, device: str = "npu", batch_size: int = 16, image_size: int = 32, seed: int = 0):
        torch.manual_seed(seed)
        self.device, self.batch_size, self.image_size = device, batch_size, image_size
        self.model = SmallResNet().to(device)
        # foreach=True: the same optimizer implementation on both devices (see gpt_transformer.py).
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9, foreach=True)
        self.data = torch.Generator().manual_seed(seed + 1)

    def step(self) -> float:
        """One step on a fresh synthetic batch; returns the loss."""
        size = self.image_size
        images = torch.randn(self.batch_size, 3, size, size, generator=self.data).to(self.device)
        labels = torch.randint(0, 10, (self.batch_size,), generator=self.data).to(self.device)
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(images), labels)
        loss.backward()
        self.optimizer.step()
        return loss.item()


def train(device: str = "npu", steps: int = 5, batch_size: int = 16, image_size: int = 32, seed: int = 0):
    """Trains from a fixed seed and returns the loss of every step."""
    trainer = Trainer(device, batch_size, image_size, seed)
    return [trainer.step() for _ in range(steps)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="npu")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    for step, loss in enumerate(train(args.device, args.steps)):
        print(f"step {step}: loss {loss:.6f}")


if __name__ == "__main__":
    main()
