"""The LLaMA example sets each reference up as its published script runs it: the ModelLink LLaMA-7B/13B
scripts have no fused rotary / SwiGLU flags, so those layers run Megatron's aten kernels, and every setup
computes Megatron's vocab-parallel cross-entropy."""

import dataclasses
import importlib.util
import pathlib
import sys

import torch
import torch.nn.functional as F

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "llama_estimate.py"


def _example():
    name = "llama_estimate_under_test"
    if name not in sys.modules:  # its dataclass resolves annotations through sys.modules
        spec = importlib.util.spec_from_file_location(name, EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_setups_carry_the_fused_flags_of_their_scripts():
    example = _example()
    assert example.SETUPS["llama2-7b"].fused_rotary and example.SETUPS["llama2-7b"].fused_swiglu
    for key in ("llama-7b", "llama-13b"):
        assert not example.SETUPS[key].fused_rotary and not example.SETUPS[key].fused_swiglu


def test_unfused_rotary_and_swiglu_cost_more_than_the_fused_kernels():
    example = _example()
    small = dataclasses.replace(example.SETUPS["llama-7b"], width=1024, heads=8, ffn=2816, vocab=4096, seq=1024,
                                micro_batch=1)
    fused = example.stage_times(dataclasses.replace(small, fused_rotary=True, fused_swiglu=True))["layer"]
    unfused = example.stage_times(small)["layer"]
    assert unfused > fused


def test_unfused_layer_computes_what_the_fused_kernels_compute():
    example = _example()
    torch.manual_seed(0)
    fused = example.DecoderLayer(64, 4, 96).to("npu")
    unfused = example.DecoderLayer(64, 4, 96, fused_rotary=False, fused_swiglu=False).to("npu")
    unfused.load_state_dict(fused.state_dict())
    x = torch.randn(2, 16, 64, device="npu")
    angles = torch.randn(1, 16, 1, 8, device="npu")
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device="npu"), 1)
    torch.testing.assert_close(unfused(x, cos, sin, mask).cpu(), fused(x, cos, sin, mask).cpu(), rtol=1e-4, atol=1e-4)


def test_vocab_parallel_cross_entropy_matches_cross_entropy_and_its_gradient():
    example = _example()
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11, device="npu", requires_grad=True)
    target = torch.randint(0, 11, (2, 5), device="npu")
    loss = example.VocabParallelCrossEntropy.apply(logits.float(), target).mean()
    loss.backward()
    reference_logits = logits.detach().cpu().requires_grad_()
    reference = F.cross_entropy(reference_logits.view(-1, 11), target.cpu().view(-1))
    reference.backward()
    torch.testing.assert_close(loss.detach().cpu(), reference.detach())
    torch.testing.assert_close(logits.grad.cpu(), reference_logits.grad)
