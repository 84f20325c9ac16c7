"""transformers' LlamaForCausalLM with its NPU flash-attention path (attn_implementation
"flash_attention_2" on an NPU runs torch_npu.npu_fusion_attention: BSND, or TND for padded
batches) trains and generates on npusim like its sdpa path on the CPU. Tiny config, random
weights; skipped when transformers is not installed."""

import copy

import pytest
import torch

import npusim
import torch_npu  # noqa: F401

transformers = pytest.importorskip("transformers")


def tiny_pair():
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    reference = transformers.LlamaForCausalLM(config)
    reference.set_attn_implementation("sdpa")
    model = copy.deepcopy(reference)
    model.set_attn_implementation("flash_attention_2")
    return reference, model.npu()


def test_npu_flash_attention_path_is_taken_and_trains_like_sdpa():
    assert transformers.utils.is_torch_npu_available()
    reference, model = tiny_pair()
    opt_ref = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(1)
    ids = torch.randint(0, 64, (2, 12))
    npusim.reset_placement_report()
    for _ in range(3):
        losses = []
        for net, optimizer, data in ((reference, opt_ref, ids), (model, opt, ids.npu())):
            optimizer.zero_grad()
            loss = net(data, labels=data).loss
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-4, abs=1e-5)
    operators = npusim.placement_report()["operators"]
    assert operators["npu::npu_fusion_attention"]["ai_core"] == 3 * 2  # 3 steps x 2 layers
    assert operators["npu::npu_fusion_attention_grad"]["ai_core"] == 3 * 2


def test_padded_batch_uses_varlen_attention_and_generation_matches_sdpa(monkeypatch):
    from transformers.integrations import npu_flash_attention

    layouts = []
    original = npu_flash_attention.npu_fusion_attention

    def recording(*args, **kwargs):
        layouts.append(kwargs.get("input_layout", args[4] if len(args) > 4 else None))
        return original(*args, **kwargs)

    monkeypatch.setattr(npu_flash_attention, "npu_fusion_attention", recording)
    reference, model = tiny_pair()
    torch.manual_seed(2)
    ids = torch.randint(1, 64, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, 6:] = 0  # right padding: transformers unpads into TND with cumulative lengths
    with torch.no_grad():
        ref_logits = reference(ids, attention_mask=mask).logits
        logits = model(ids.npu(), attention_mask=mask.npu()).logits.cpu()
    assert layouts == ["TND", "TND"]  # one varlen call per layer
    valid = mask.bool()
    torch.testing.assert_close(logits[valid], ref_logits[valid], rtol=1e-4, atol=1e-4)
    prompt = torch.randint(1, 64, (1, 5))
    with torch.no_grad():
        ref_tokens = reference.generate(prompt, max_new_tokens=6, do_sample=False)
        tokens = model.generate(prompt.npu(), max_new_tokens=6, do_sample=False).cpu()
    assert torch.equal(tokens, ref_tokens)
