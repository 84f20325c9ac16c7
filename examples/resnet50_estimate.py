"""Estimate ResNet-50 training throughput per Ascend 910B2 NPU, as Ascend's ModelZoo trains it, on any laptop.

The setup is the Ascend ModelZoo PyTorch ResNet-50 recipe (the README's AMP O2 rows): torchvision's
ResNet-50 v1.5 (the stride on the 3x3 convolution), 224x224 images, batch 256 per NPU, apex AMP at
opt level O2 (fp16 weights and activations, batch norm kept in fp32, dynamic loss scaling), momentum
SGD on fp32 master weights (apex's fused NPU SGD over flattened gradients), cross-entropy loss. The
published figures: 1,678 images/s on one card (1p row; the README names no chip) and 14,371 images/s
on an 8-NPU "Atlas 900 A2 PoDc" (910B), 1,796 per NPU (the table of 10 May 2025; 14,321 in the
table of 31 December 2024 it replaced, same scripts); with data parallelism the 51 MB gradient
all-reduce overlaps the backward, so the per-NPU step is the single-NPU step.

How it is estimated (in ``npusim.estimate()``: shapes and device memory, no data): one training
step runs on the simulated chip after a warm-up step, between two events; the pinned input batch is
copied to the device (``non_blocking``) at the start of each step, as a DataLoader with
``pin_memory=True`` delivers it.

The PoDc's NPU is not named, and the server comes with a 376 TFLOPS (910B2) or a 313 TFLOPS (910B3) part;
the published rows fit the 910B3, which this script simulates unless ``NPUSIM_SOC`` or ``--chip`` names
another (megatron_estimate.PUBLISHED_NPU).

    npusim run examples/resnet50_estimate.py [--batch 256] [--chip Ascend910B2]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import npusim
from megatron_estimate import chip_argument, select_chip, timed_seconds  # examples/, beside this script

# Ascend ModelZoo PyTorch ResNet-50 README (AMP O2, batch 256 per card): 8p on "Atlas 900 A2 PoDc"
# (910B), per NPU, in the table "2025年5月10日更新的性能数据" (CANN 8.1.RC1, torch_npu 7.0.0; it replaced
# the 14,321 of "2024年12月31日更新的性能数据" at ac656f0, the recipe's scripts unchanged between the two).
REFERENCE_IMAGES_PER_S = 14371 / 8
SOURCE = ("xiaobingling93-pixel/Ascend-ModelZoo-PyTorch (mirror of Ascend/ModelZoo-PyTorch) "
          "PyTorch/built-in/cv/classification/ResNet50_ID4149_for_PyTorch/README.md @ "
          "393c12efd0b7c1419b6c4c99031149beeb9bacc2")


class Bottleneck(nn.Module):
    """torchvision's ResNet-50 v1.5 bottleneck: 1x1, 3x3 (with the stride), 1x1 x4, projection shortcut."""

    def __init__(self, channels_in: int, width: int, stride: int):
        super().__init__()
        out = 4 * width
        self.conv1 = nn.Conv2d(channels_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1 or channels_in != out:
            self.downsample = nn.Sequential(nn.Conv2d(channels_in, out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = F.relu(self.bn2(self.conv2(y)), inplace=True)
        y = self.bn3(self.conv3(y))
        return F.relu(y + identity, inplace=True)


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        blocks, channels = [], 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for index in range(count):
                blocks.append(Bottleneck(channels, width, stride if index == 0 else 1))
                channels = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x)), inplace=True), 3, stride=2, padding=1)
        x = self.blocks(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _keep_batch_norm_fp32(model: nn.Module) -> None:
    """apex O2: the model in fp16 except batch norm (keep_batchnorm_fp32=True)."""
    model.half()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.float()


def step_seconds(batch: int = 256) -> float:
    """Simulated seconds of one training step (after a warm-up step), from an idle device."""
    with npusim.estimate(), torch.device("npu"):
        model = ResNet50()
        _keep_batch_norm_fp32(model)
        half_parameters = list(model.parameters())
        # apex O2 with combine_grad: fp32 master weights and gradients in one flat buffer each.
        count = sum(p.numel() for p in half_parameters)
        master = nn.Parameter(torch.empty(count))
        master.grad = torch.empty(count)
        optimizer = torch.optim.SGD([master], lr=0.1, momentum=0.9, weight_decay=1e-4, fused=True)
        flat_half_grads = torch.empty(count, dtype=torch.float16)
        flat_half_weights = torch.empty(count, dtype=torch.float16)
        found_inf, inv_scale = torch.zeros(1), torch.ones(1)
        images_host = torch.empty(batch, 3, 224, 224, dtype=torch.float16, device="cpu").pin_memory()
        labels_host = torch.empty(batch, dtype=torch.int64, device="cpu").pin_memory()

        def step():
            images = images_host.to("npu", non_blocking=True)
            labels = labels_host.to("npu", non_blocking=True)
            loss = F.cross_entropy(model(images).float(), labels)
            model.zero_grad(set_to_none=True)
            loss.backward()
            # The loss scaler: flattened fp16 gradients unscaled into the fp32 master gradients (one
            # non-finite check), the fused SGD step, the master weights copied back to the fp16 model.
            master.grad.copy_(flat_half_grads)
            torch._amp_foreach_non_finite_check_and_unscale_([master.grad], found_inf, inv_scale)
            optimizer.step()
            flat_half_weights.copy_(master)

        step()
        return timed_seconds(step)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=256)
    chip_argument(parser)
    args = parser.parse_args()
    chip = select_chip(args.chip)
    started = time.perf_counter()
    seconds = step_seconds(args.batch)
    print(f"ResNet-50 training on an {chip}, AMP O2, batch {args.batch}: "
          f"{seconds * 1e3:.1f} ms per step -> "
          f"{args.batch / seconds:.0f} images/s per NPU (published, Atlas 900 A2 PoDc: {REFERENCE_IMAGES_PER_S:.0f})")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()
