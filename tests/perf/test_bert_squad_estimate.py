"""The BERT SQuAD validation example: ModelZoo's modeling.py network (separate projections, masked softmax with
dropout, fast_gelu, QA head), computing on npu what the same network computes on the CPU, and priced as a whole
fine-tuning step."""

import dataclasses
import importlib
import pathlib
import sys

import torch

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _example():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module("bert_squad_estimate")


def test_network_has_bert_base_parameters():
    example = _example()
    model = example.BertForQuestionAnswering(example.SETUPS["bert-base"])
    # bert-base-uncased without its pooler (run_squad's model does not use it), plus the 768 x 2 QA head.
    assert sum(p.numel() for p in model.parameters()) == 109_482_240 - (768 * 768 + 768) + (768 * 2 + 2)


def test_npu_computes_what_the_cpu_computes(monkeypatch):
    import torch_npu

    example = _example()
    small = dataclasses.replace(example.SETUPS["bert-base"], layers=2, width=64, heads=4, ffn=128, vocab=100)
    torch.manual_seed(0)
    model = example.BertForQuestionAnswering(small).eval()
    ids = torch.randint(0, 100, (2, 16))
    types = torch.randint(0, 2, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    npu_model = example.BertForQuestionAnswering(small).eval().to("npu")
    npu_model.load_state_dict(model.state_dict())
    start, end = npu_model(ids.npu(), types.npu(), mask.npu())
    # The CPU reference takes fast_gelu's documented formula: x / (1 + exp(-1.702|x|)) * exp(0.851 (x - |x|)).
    monkeypatch.setattr(torch_npu, "npu_fast_gelu",
                        lambda x: x / (1 + torch.exp(-1.702 * x.abs())) * torch.exp(0.851 * (x - x.abs())))
    reference_start, reference_end = model(ids, types, mask)
    torch.testing.assert_close(start.cpu(), reference_start, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(end.cpu(), reference_end, rtol=1e-4, atol=1e-4)


def test_step_is_priced_on_the_ai_core():
    from npusim import _C

    example = _example()
    small = dataclasses.replace(example.SETUPS["bert-large"], layers=2, batch=2)
    _C._reset_placement_report()
    r = example.step_seconds(small)
    operators = _C._placement_report()["operators"]
    assert r["step_s"] > r["compute_s"] > 0 and r["allreduce_s"] > 0
    assert all(counts["cpu_fallback"] == 0 for counts in operators.values())
    assert operators["aten::bmm"]["ai_core"] > 0 and operators["npu::npu_fast_gelu"]["ai_core"] > 0
