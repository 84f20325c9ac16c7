"""A word-level LSTM language model (PyTorch's word_language_model example, small) trained for a
few steps on synthetic tokens with truncated backpropagation through time.

Runs on the simulated NPU by default (``--device npu``); ``--device cpu`` runs the same program
on the CPU, and both print the same losses: on npu nn.LSTM runs as torch_npu runs it (one fused
kernel per layer on the chip), with the CPU's own numbers.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class LstmLanguageModel(nn.Module):
    def __init__(self, vocab: int = 1000, width: int = 64, hidden: int = 128, layers: int = 2):
        super().__init__()
        self.encoder = nn.Embedding(vocab, width)
        self.rnn = nn.LSTM(width, hidden, layers)
        self.decoder = nn.Linear(hidden, vocab)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens, state):
        output, state = self.rnn(self.encoder(tokens), state)
        return self.decoder(output), state


class Trainer:
    """The example's training state and its loop body: one step per call to :meth:`step`."""

    def __init__(self, device: str = "npu", batch_size: int = 8, bptt: int = 35, seed: int = 0):
        torch.manual_seed(seed)
        self.device, self.batch_size, self.bptt = device, batch_size, bptt
        self.model = LstmLanguageModel().to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=20.0, foreach=True)
        self.data = torch.Generator().manual_seed(seed + 1)
        self.state = None

    def step(self) -> float:
        """One step of truncated backpropagation through time on a fresh stretch of tokens."""
        tokens = torch.randint(0, 1000, (self.bptt + 1, self.batch_size), generator=self.data).to(self.device)
        if self.state is not None:  # carry the state over, cut from the previous graph
            self.state = tuple(s.detach() for s in self.state)
        self.optimizer.zero_grad()
        logits, self.state = self.model(tokens[:-1], self.state)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 0.25, foreach=True)
        self.optimizer.step()
        return loss.item()


def train(device: str = "npu", steps: int = 5, batch_size: int = 8, bptt: int = 35, seed: int = 0):
    """Trains from a fixed seed and returns the loss of every step."""
    trainer = Trainer(device, batch_size, bptt, seed)
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
