"""The compile corpus: programs users compile, trained for a few steps on npu with torch.compile
(forward and backward, ``default`` and ``reduce-overhead`` modes) next to the same program in
eager mode from the same initial weights and data; losses and final weights must agree within
the tolerance of kernel fusion (fused kernels round differently from one-by-one operators).

Models (corpus_models.py, written after their public architectures, tiny sizes): nanoGPT- and
minGPT-style GPTs, Hugging Face's Llama and BERT built from configs (no weights), a ResNet, a
DCGAN, an LSTM language model, and a classifier over variable sequence lengths compiled with
``dynamic=True`` and with automatic dynamic shapes. Anything that cannot work is marked xfail
with its reason.

Each case prints one line (shown with ``-s``, and in a failure's message): graph breaks and
recompilations from npusim's compile report, the NPUGraph runs of reduce-overhead, the host
time of a steady training step compiled and eager, and the estimated device time of a step on
the simulated chip (npusim.performance_report). A summary table follows the last case.
Inductor compiles C++; its on-disk cache makes reruns fast.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import npusim
import corpus_models as models
from npusim.compile import npu_graph_trees
from npusim.compile.report import compile_report, reset_compile_report

MODES = ["default", "reduce-overhead"]
# Steps: the first compiles (and warms up a graph), the second captures the graphs of
# reduce-overhead, the third replays the forward and captures the backward; the rest are steady.
STEPS = 5
STEADY_FROM = 3

_results: list[dict[str, Any]] = []


@dataclasses.dataclass
class Case:
    name: str
    build: Callable[[], dict[str, nn.Module]]
    optimizers: Callable[[dict[str, nn.Module]], list[torch.optim.Optimizer]]
    batch: Callable[[int], Any]
    # train_step(callables, modules, optimizers, batch, state) -> detached losses of the step
    train_step: Callable[..., list[torch.Tensor]]
    compile_kwargs: dict = dataclasses.field(default_factory=dict)
    tolerance: dict = dataclasses.field(default_factory=lambda: dict(rtol=1e-3, atol=1e-4))
    steps: int = STEPS
    xfail: dict[str, str] = dataclasses.field(default_factory=dict)  # mode -> reason


def _generator(step: int) -> torch.Generator:
    return torch.Generator().manual_seed(1000 + step)


def _tokens(step, batch, length, vocab):
    """Inputs and next-token targets, contiguous as nanoGPT's get_batch stacks them."""
    data = torch.randint(0, vocab, (batch, length + 1), generator=_generator(step))
    return data[:, :-1].contiguous().to("npu"), data[:, 1:].contiguous().to("npu")


# ---- cases

def _gpt_step(callables, modules, optimizers, batch, state):
    (optimizer,) = optimizers
    optimizer.zero_grad(set_to_none=True)
    inputs, targets = batch
    _, loss = callables["model"](inputs, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(modules["model"].parameters(), 1.0)
    optimizer.step()
    return [loss.detach()]


def _nanogpt():
    torch.manual_seed(0)
    return {"model": models.NanoGPT().to("npu")}


def _mingpt():
    torch.manual_seed(0)
    return {"model": models.MinGPT().to("npu")}


def _hf_llama():
    transformers = pytest.importorskip("transformers", reason="Hugging Face transformers is not installed")
    config = transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      use_cache=False)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return {"model": transformers.LlamaForCausalLM(config).to("npu")}


def _hf_llama_step(callables, modules, optimizers, batch, state):
    (optimizer,) = optimizers
    optimizer.zero_grad(set_to_none=True)
    loss = callables["model"](input_ids=batch, labels=batch).loss
    loss.backward()
    optimizer.step()
    return [loss.detach()]


def _hf_bert():
    transformers = pytest.importorskip("transformers", reason="Hugging Face transformers is not installed")
    config = transformers.BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0, num_labels=3)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return {"model": transformers.BertForSequenceClassification(config).to("npu")}


def _bert_batch(step):
    generator = _generator(step)
    ids = torch.randint(1, 96, (4, 12), generator=generator)
    lengths = torch.tensor([12, 9, 7, 12])
    mask = (torch.arange(12)[None, :] < lengths[:, None]).long()
    labels = torch.randint(0, 3, (4,), generator=generator)
    return ids.mul(mask).to("npu"), mask.to("npu"), labels.to("npu")


def _hf_bert_step(callables, modules, optimizers, batch, state):
    (optimizer,) = optimizers
    ids, mask, labels = batch
    optimizer.zero_grad(set_to_none=True)
    loss = callables["model"](input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    optimizer.step()
    return [loss.detach()]


def _resnet():
    torch.manual_seed(0)
    return {"model": models.ResNet().to("npu")}


def _resnet_batch(step):
    generator = _generator(step)
    return (torch.randn(4, 3, 16, 16, generator=generator).to("npu"),
            torch.randint(0, 10, (4,), generator=generator).to("npu"))


def _resnet_step(callables, modules, optimizers, batch, state):
    (optimizer,) = optimizers
    images, labels = batch
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(callables["model"](images), labels)
    loss.backward()
    optimizer.step()
    return [loss.detach()]


def _dcgan():
    torch.manual_seed(0)
    generator, discriminator = models.Generator().to("npu"), models.Discriminator().to("npu")
    generator.apply(models.dcgan_weights_init)
    discriminator.apply(models.dcgan_weights_init)
    return {"generator": generator, "discriminator": discriminator}


def _dcgan_optimizers(modules):
    return [torch.optim.Adam(modules["discriminator"].parameters(), lr=2e-4, betas=(0.5, 0.999)),
            torch.optim.Adam(modules["generator"].parameters(), lr=2e-4, betas=(0.5, 0.999))]


def _dcgan_batch(step):
    generator = _generator(step)
    return (torch.rand(4, 3, 16, 16, generator=generator).mul(2).sub(1).to("npu"),
            torch.randn(4, 8, 1, 1, generator=generator).to("npu"))


def _dcgan_step(callables, modules, optimizers, batch, state):
    optimizer_d, optimizer_g = optimizers
    real, noise = batch
    netd, netg = callables["discriminator"], callables["generator"]
    ones, zeros = torch.ones(real.size(0), device="npu"), torch.zeros(real.size(0), device="npu")
    # (1) the discriminator: log(D(x)) + log(1 - D(G(z)))
    optimizer_d.zero_grad(set_to_none=True)
    error_real = F.binary_cross_entropy(netd(real), ones)
    error_real.backward()
    fake = netg(noise)
    error_fake = F.binary_cross_entropy(netd(fake.detach()), zeros)
    error_fake.backward()
    optimizer_d.step()
    # (2) the generator: log(D(G(z)))
    optimizer_g.zero_grad(set_to_none=True)
    error_g = F.binary_cross_entropy(netd(fake), ones)
    error_g.backward()
    optimizer_g.step()
    return [(error_real + error_fake).detach(), error_g.detach()]


def _lstm():
    torch.manual_seed(0)
    return {"model": models.LSTMLanguageModel().to("npu")}


def _lstm_batch(step):
    data = torch.randint(0, 64, (9, 4), generator=_generator(step)).to("npu")  # (time, batch)
    return data[:-1], data[1:]


def _lstm_step(callables, modules, optimizers, batch, state):
    (optimizer,) = optimizers
    inputs, targets = batch
    if "hidden" not in state:
        state["hidden"] = modules["model"].init_hidden(inputs.size(1), "npu")
    # Truncated backpropagation through time: the state goes on, its history does not.
    hidden = tuple(h.detach() for h in state["hidden"])
    optimizer.zero_grad(set_to_none=True)
    output, hidden = callables["model"](inputs, hidden)
    loss = F.nll_loss(output.view(-1, output.size(-1)), targets.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(modules["model"].parameters(), 0.25)
    optimizer.step()
    # Outside the compiled region, so that a graph replay cannot overwrite the carried state.
    state["hidden"] = tuple(h.detach().clone() for h in hidden)
    return [loss.detach()]


def _classifier():
    torch.manual_seed(0)
    return {"model": models.VariableLengthClassifier().to("npu")}


LENGTHS = [8, 12, 16, 12, 8, 16]


def _classifier_batch(step):
    generator = _generator(step)
    length = LENGTHS[step % len(LENGTHS)]
    return (torch.randint(0, 64, (4, length), generator=generator).to("npu"),
            torch.randint(0, 4, (4,), generator=generator).to("npu"))


def _classifier_step(callables, modules, optimizers, batch, state):
    (optimizer,) = optimizers
    tokens, labels = batch
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(callables["model"](tokens), labels)
    loss.backward()
    optimizer.step()
    return [loss.detach()]


def _adamw(modules):
    return [torch.optim.AdamW(modules["model"].parameters(), lr=1e-3)]


def _sgd(modules):
    return [torch.optim.SGD(modules["model"].parameters(), lr=0.05, momentum=0.9)]


CASES = [
    Case("nanogpt", _nanogpt,
         lambda m: [m["model"].configure_optimizers(0.1, 1e-3, (0.9, 0.95))],
         lambda step: _tokens(step, 4, 16, 96), _gpt_step),
    Case("mingpt", _mingpt, _adamw, lambda step: _tokens(step, 4, 16, 96), _gpt_step),
    Case("hf-llama", _hf_llama, _adamw, lambda step: _tokens(step, 2, 12, 96)[0], _hf_llama_step),
    Case("hf-bert", _hf_bert, _adamw, _bert_batch, _hf_bert_step),
    # Open defects found by this corpus (issue 24's note), each as observed:
    Case("resnet", _resnet, _sgd, _resnet_batch, _resnet_step,
         xfail={mode: "open defect: the compiled ResNet's loss differs from eager by 0.5-0.7% at step 3 "
                      "(0.012-0.016 absolute); cause not found yet" for mode in ("default", "reduce-overhead")}),
    Case("dcgan", _dcgan, _dcgan_optimizers, _dcgan_batch, _dcgan_step,
         xfail={"reduce-overhead": "open defect: the discriminator reads a generator output that a later replay "
                                   "overwrote (the graph-trees error is raised); the step's order needs a clone "
                                   "or a mark-step, not yet settled"}),
    Case("lstm-lm", _lstm, _sgd, _lstm_batch, _lstm_step,
         xfail={"reduce-overhead": "open defect: no NPUGraph is captured for the LSTM step, "
                                   "so nothing replays"}),
    Case("dynamic=True", _classifier, _adamw, _classifier_batch, _classifier_step,
         compile_kwargs=dict(dynamic=True), steps=len(LENGTHS),
         xfail={"reduce-overhead": "open defect: each new sequence length captures a new NPUGraph and none is "
                                   "replayed within the corpus's few steps"}),
    Case("automatic-dynamic", _classifier, _adamw, _classifier_batch, _classifier_step,
         steps=len(LENGTHS),
         xfail={"reduce-overhead": "open defect: each new sequence length captures a new NPUGraph and none is "
                                   "replayed within the corpus's few steps"}),
]


# ---- the harness

def _reset_compile_state():
    torch._dynamo.reset()
    reset_compile_report()
    npu_graph_trees.reset_stats()
    npu_graph_trees.reset_generations()


def _train(case: Case, modules, mode: str | None):
    """Trains case.steps steps; returns (losses per step, host ns per steady step, simulated
    seconds per steady step)."""
    optimizers = case.optimizers(modules)
    callables = dict(modules)
    if mode is not None:
        callables = {name: torch.compile(module, mode=mode, **case.compile_kwargs) for name, module in modules.items()}
    losses, host_ns, state = [], [], {}
    for step in range(case.steps):
        batch = case.batch(step)
        if step == STEADY_FROM:
            torch.npu.synchronize()
            npusim.reset_performance_report()
            npusim.step()
        start = time.perf_counter_ns()
        step_losses = case.train_step(callables, modules, optimizers, batch, state)
        losses.append(torch.stack(step_losses).cpu())  # a host read: the step is done
        if step >= STEADY_FROM:
            host_ns.append(time.perf_counter_ns() - start)
            npusim.step()
    device_s = npusim.performance_report()["step_s"]
    return losses, host_ns, device_s


def _summary(case, mode, report, graphs, host_compiled, host_eager, device_compiled, device_eager) -> dict:
    breaks = [f"{b['source'] or frame['source']}: {b['reason']}" for frame in report["frames"]
              for b in frame["graph_breaks"]]
    recompiles = [f"{frame['function']}: {r['reason']}" for frame in report["frames"] for r in frame["recompiles"]]
    return {
        "model": case.name, "mode": mode, "frames": len(report["frames"]),
        "graph_breaks": len(breaks), "break_reasons": breaks,
        "recompiles": len(recompiles), "recompile_reasons": recompiles,
        "npu_graphs": dict(graphs),
        "host_compiled_ms": host_compiled / 1e6, "host_eager_ms": host_eager / 1e6,
        "device_compiled_ms": device_compiled * 1e3, "device_eager_ms": device_eager * 1e3,
    }


def _line(result: dict) -> str:
    graphs = result["npu_graphs"]
    graph_text = (f" npu graphs {graphs['captured']} captured/{graphs['replayed']} replays/"
                  f"{graphs['eager']} runs without graph" if result["mode"] == "reduce-overhead" else "")
    text = (f"[compile corpus] {result['model']:<17} {result['mode']:<15} frames {result['frames']} "
            f"graph breaks {result['graph_breaks']} recompiles {result['recompiles']}{graph_text} | "
            f"host/step compiled {result['host_compiled_ms']:.2f} ms eager {result['host_eager_ms']:.2f} ms "
            f"({result['host_compiled_ms'] / result['host_eager_ms']:.2f}x) | "
            f"est. device/step compiled {result['device_compiled_ms']:.3f} ms eager {result['device_eager_ms']:.3f} ms")
    for reason in result["break_reasons"]:
        text += f"\n    graph break: {reason}"
    for reason in result["recompile_reasons"]:
        text += f"\n    recompile: {reason}"
    return text


@pytest.fixture(scope="module", autouse=True)
def _print_summary():
    yield
    if _results:
        print("\n[compile corpus] summary")
        for result in _results:
            print(_line(result).split("\n")[0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_compiled_training_equals_eager(case: Case, mode: str):
    if mode in case.xfail:
        pytest.xfail(case.xfail[mode])
    _reset_compile_state()
    initial = case.build()
    eager_modules = copy.deepcopy(initial)
    compiled_modules = copy.deepcopy(initial)
    del initial
    eager_losses, eager_host, eager_device = _train(case, eager_modules, None)
    compiled_losses, compiled_host, compiled_device = _train(case, compiled_modules, mode)
    result = _summary(case, mode, compile_report(), npu_graph_trees.stats, sum(compiled_host) / len(compiled_host),
                      sum(eager_host) / len(eager_host), compiled_device, eager_device)
    _results.append(result)
    line = _line(result)
    print("\n" + line)
    assert result["frames"] >= 1, f"nothing was compiled\n{line}"
    for step, (got, want) in enumerate(zip(compiled_losses, eager_losses)):
        torch.testing.assert_close(got, want, **case.tolerance, msg=lambda m: f"loss of step {step}: {m}\n{line}")
    for name in eager_modules:
        for (parameter_name, got), want in zip(compiled_modules[name].named_parameters(),
                                               eager_modules[name].parameters()):
            torch.testing.assert_close(got.detach().cpu(), want.detach().cpu(), **case.tolerance,
                                       msg=lambda m: f"{name}.{parameter_name} after training: {m}\n{line}")
    if mode == "reduce-overhead":
        assert npu_graph_trees.stats["replayed"] > 0, f"no NPUGraph was replayed\n{line}"
