"""A small classifier (no CUDA code: the migration copies this file unchanged)."""
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, features: int = 20, classes: int = 4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 64), nn.GELU(), nn.Linear(64, classes))

    def forward(self, x):
        return self.body(x)
