"""The Stable Diffusion 2.1 validation example: SD 2.1's networks as the ModelZoo fork trains them (its NPU flash
attention processor, GEGLU, gradient checkpointing placement), computing on npu what diffusers computes on the CPU,
and priced as a whole training step with no CPU fallback."""

import dataclasses
import importlib
import pathlib
import sys

import pytest
import torch

pytest.importorskip("diffusers", reason="diffusers is not installed (scripts/setup-tests.sh installs it)")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _example():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module("sd21_estimate")


def test_networks_have_sd21_parameters():
    example = _example()
    with torch.device("meta"):  # shapes only
        unet = example.build_unet(example.SETUPS["sd21"])
    # stabilityai/stable-diffusion-2-1: UNet 865,910,724 parameters, VAE 83,653,863.
    assert sum(p.numel() for p in unet.parameters()) == 865_910_724
    from diffusers import AutoencoderKL

    with torch.device("meta"):
        assert sum(p.numel() for p in AutoencoderKL(**example.VAE_CONFIG).parameters()) == 83_653_863
    processors = unet.attn_processors.values()
    assert len(processors) == 32 and all(isinstance(p, example.NpuFlashAttnProcessor) for p in processors)


def test_checkpointing_covers_the_down_and_up_blocks_only():
    example = _example()
    with torch.device("meta"):
        unet = example.build_unet(example.SETUPS["sd21"])
        part = example.build_unet(dataclasses.replace(example.SETUPS["sd21"], release_part_gradient_checkpointing=True))
    wrapped = [m for m in unet.modules() if isinstance(m, example._Checkpointed)]
    # 2 ResNets in each of the 4 down blocks, 3 in each of the 4 up blocks; 2 + 3 x 3 transformers.
    assert len(wrapped) == 4 * 2 + 4 * 3 + 3 * 2 + 3 * 3
    assert not any(isinstance(m, example._Checkpointed) for m in unet.mid_block.modules())
    # _release_part_gradient_checkpointing: only every second transformer of a down block stays checkpointed.
    assert len([m for m in part.modules() if isinstance(m, example._Checkpointed)]) == 4 * 2 + 4 * 3 + 3


def test_npu_attention_processor_computes_what_diffusers_computes():
    from diffusers.models.attention_processor import Attention, AttnProcessor

    example = _example()
    torch.manual_seed(0)
    attention = Attention(query_dim=64, cross_attention_dim=32, heads=4, dim_head=16)
    x, context = torch.randn(2, 24, 64), torch.randn(2, 7, 32)
    attention.set_processor(AttnProcessor())
    expected = attention(x, encoder_hidden_states=context)
    npu = Attention(query_dim=64, cross_attention_dim=32, heads=4, dim_head=16).to("npu")
    npu.load_state_dict(attention.state_dict())
    npu.set_processor(example.NpuFlashAttnProcessor())
    got = npu(x.npu(), encoder_hidden_states=context.npu()).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_step_is_priced_on_the_ai_core():
    from npusim import _C

    example = _example()
    small = dataclasses.replace(example.SETUPS["sd21"], batch=1, resolution=256)
    _C._reset_placement_report()
    r = example.step_seconds(small, warm_up=False)
    operators = _C._placement_report()["operators"]
    assert all(counts["cpu_fallback"] == 0 for counts in operators.values())
    assert r["step_s"] >= r["device_step_s"] > r["unet_backward_s"] > r["unet_forward_s"] > 0
    assert r["vae_s"] > 0 and r["optimizer_s"] > 0 and r["ema_s"] > 0 and r["allreduce_s"] > 0
    assert r["images_per_s_per_npu"] == pytest.approx(1 / r["step_s"])
    # 32 attentions forward, 30 again in the backward's recomputation (the mid block's 2 are not checkpointed),
    # 32 gradients; the same for GEGLU (16 + 15 forward, 16 backward).
    assert operators["npu::npu_fusion_attention"]["ai_core"] == 62
    assert operators["npu::npu_fusion_attention_grad"]["ai_core"] == 32
    assert operators["npu::npu_geglu"]["ai_core"] == 31 and operators["npu::npu_geglu_grad"]["ai_core"] == 16
