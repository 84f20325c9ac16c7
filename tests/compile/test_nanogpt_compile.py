"""nanoGPT's compile path: ``train.py --compile=True`` on npu, as its training loop runs it.

The loop follows nanoGPT's train.py: ``model = torch.compile(model)`` (default mode), batches of
random windows of a token stream (``get_batch``), the warm-up and cosine learning-rate schedule
(``get_lr``), gradient accumulation over micro-steps with the loss divided by their number, a
GradScaler that is off in float32 (train.py enables it for float16 only), gradient clipping
after ``unscale_``, ``zero_grad(set_to_none=True)``, and ``estimate_loss()`` in eval mode under
no_grad between iterations. Its first compiled training step used to fail on npu with
"expected size 2==2, stride 1==64 at dim=1" from the fused SDPA's logsumexp
(test_attention_fake_kernels). The compiled run must equal the eager run of the same loop.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import npusim  # noqa: F401
import corpus_models
from npusim.compile.report import compile_report, format_compile_report, reset_compile_report

BLOCK_SIZE, BATCH_SIZE, VOCAB = 16, 4, 96
GRADIENT_ACCUMULATION_STEPS, MAX_ITERS, EVAL_ITERS = 2, 4, 2
LEARNING_RATE, MIN_LR, WARMUP_ITERS, LR_DECAY_ITERS = 6e-4, 6e-5, 2, 4


def get_lr(iteration: int) -> float:
    """train.py's schedule: linear warm-up, then cosine decay to min_lr."""
    if iteration < WARMUP_ITERS:
        return LEARNING_RATE * (iteration + 1) / (WARMUP_ITERS + 1)
    if iteration > LR_DECAY_ITERS:
        return MIN_LR
    ratio = (iteration - WARMUP_ITERS) / (LR_DECAY_ITERS - WARMUP_ITERS)
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LEARNING_RATE - MIN_LR)


class Batches:
    """get_batch(split) over a fixed token stream, with its own generator (same windows for
    the eager and the compiled run)."""

    def __init__(self, seed: int):
        stream = np.random.default_rng(0).integers(0, VOCAB, size=4000, dtype=np.uint16)
        self.data = {"train": stream[:3600], "val": stream[3600:]}
        self.generator = torch.Generator().manual_seed(seed)

    def get_batch(self, split: str):
        data = self.data[split]
        ix = torch.randint(len(data) - BLOCK_SIZE, (BATCH_SIZE,), generator=self.generator)
        x = torch.stack([torch.from_numpy(data[i:i + BLOCK_SIZE].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + BLOCK_SIZE].astype(np.int64)) for i in ix])
        return x.to("npu"), y.to("npu")


def train(model, compile_model: bool, autocast_dtype=None):
    """nanoGPT's loop; returns (training losses per iteration, estimated losses)."""
    optimizer = model.configure_optimizers(1e-1, LEARNING_RATE, (0.9, 0.95))
    if compile_model:
        model = torch.compile(model)
    scaler = torch.amp.GradScaler("npu", enabled=False)
    ctx = (torch.amp.autocast(device_type="npu", dtype=autocast_dtype) if autocast_dtype is not None
           else torch.autocast("npu", enabled=False))
    batches = Batches(seed=1337)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(EVAL_ITERS)
            for k in range(EVAL_ITERS):
                x, y = batches.get_batch(split)
                with ctx:
                    _, loss = model(x, y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    training_losses, estimates = [], [estimate_loss()]
    x, y = batches.get_batch("train")
    for iteration in range(MAX_ITERS):
        for group in optimizer.param_groups:
            group["lr"] = get_lr(iteration)
        for _ in range(GRADIENT_ACCUMULATION_STEPS):
            with ctx:
                _, loss = model(x, y)
                loss = loss / GRADIENT_ACCUMULATION_STEPS
            x, y = batches.get_batch("train")  # prefetch, as train.py does
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        training_losses.append(loss.item() * GRADIENT_ACCUMULATION_STEPS)
    estimates.append(estimate_loss())
    return training_losses, estimates


def _models():
    torch.manual_seed(0)
    # train.py's defaults: no bias in Linear and LayerNorm, no dropout.
    model = corpus_models.NanoGPT(vocab=VOCAB, block_size=BLOCK_SIZE, layers=2, heads=2, width=32, bias=False)
    model = model.to("npu")
    return model, copy.deepcopy(model)


def test_nanogpt_train_py_with_compile_equals_eager():
    torch._dynamo.reset()
    reset_compile_report()
    eager_model, compiled_model = _models()
    eager_losses, eager_estimates = train(eager_model, compile_model=False)
    compiled_losses, compiled_estimates = train(compiled_model, compile_model=True)
    report = compile_report()
    text = "\n".join(format_compile_report(report))
    print("\n" + text)
    torch.testing.assert_close(compiled_losses, eager_losses, rtol=1e-4, atol=1e-5, msg=lambda m: f"{m}\n{text}")
    for got, want in zip(compiled_estimates, eager_estimates):
        assert got.keys() == want.keys()
        for split in got:
            assert got[split] == pytest.approx(want[split], rel=1e-4), text
    for got, want in zip(compiled_model.parameters(), eager_model.parameters()):
        # AdamW: elements with ~0 gradients move by up to lr whichever their sign (corpus ADAM).
        torch.testing.assert_close(got.detach().cpu(), want.detach().cpu(), rtol=1e-3, atol=3e-4)
    # One graph for training and one for estimate_loss's eval mode under no_grad (a recompile
    # on the training flag), no graph break: the whole forward, fused attention included.
    assert report["graph_breaks"] == 0, text
    (frame,) = [f for f in report["frames"] if f["function"] == "forward"]
    assert frame["compiles"] == 2 and len(frame["recompiles"]) == 1, text
    assert report["fused_kernels"], text


def test_nanogpt_train_py_with_compile_and_bf16_autocast():
    """train.py's ``ctx`` on a device that autocasts (dtype='bfloat16'): the fused SDPA runs in
    bfloat16 with its float32 logsumexp; compiled and eager agree to bfloat16's precision."""
    torch._dynamo.reset()
    eager_model, compiled_model = _models()
    eager_losses, _ = train(eager_model, compile_model=False, autocast_dtype=torch.bfloat16)
    compiled_losses, _ = train(compiled_model, compile_model=True, autocast_dtype=torch.bfloat16)
    assert all(math.isfinite(loss) for loss in compiled_losses)
    torch.testing.assert_close(compiled_losses, eager_losses, rtol=2e-2, atol=2e-2)
