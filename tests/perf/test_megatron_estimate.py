"""The Megatron / MindSpeed-LLM step estimator and its published setups: every row cites its figure and script,
sparse modes price the blocks they compute, tensor-parallel communication shows as Megatron and MC2 schedule
it, and a small setup is estimated end to end."""

import dataclasses
import importlib
import pathlib
import re
import sys

import pytest
import torch

from perf_timing import device_us, estimate_on_npu

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _modules():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module("megatron_estimate"), importlib.import_module("megatron_setups")


def _small(**changes):
    estimator, setups = _modules()
    base = dataclasses.replace(setups.SETUPS["llama2-7b"], layers=4, width=512, heads=8, ffn=1024, vocab=2048,
                               seq=1024, micro_batch=1, global_batch=16)
    return dataclasses.replace(base, **changes)


def test_every_published_row_cites_its_figure_and_script():
    _, setups = _modules()
    assert len(setups.SETUPS) >= 20
    for s in setups.SETUPS.values():
        assert re.fullmatch(r"Ascend/MindSpeed-LLM examples/\S+\.sh @ [0-9a-f]{40}", s.source), s.source
        assert s.reference_tokens_per_s > 0
        assert s.tp * s.pp * s.dp == s.npus
        assert s.micro_batches >= 1 and s.global_batch == s.micro_batches * s.dp * s.micro_batch
        assert s.heads % s.tp == 0 and s.ffn % s.tp == 0
    assert len({s.family for s in setups.SETUPS.values()}) >= 8


def test_sliding_window_prices_only_its_band():
    """Mistral's --sliding-window sets pre_tockens on sparse_mode 4: the kernel computes the band, not the
    causal triangle."""
    estimator, _ = _modules()
    causal = _small(seq=8192, heads=8, width=1024, ffn=2048)
    window = dataclasses.replace(causal, sliding_window=1024)
    assert estimator.stage_times(window)["layer"] < 0.8 * estimator.stage_times(causal)["layer"]


def test_causal_band_costs_about_half_of_full_attention():
    import torch_npu

    with estimate_on_npu():
        q = torch.empty(4096, 1, 8 * 128, dtype=torch.bfloat16)
        mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
        full = device_us(lambda: torch_npu.npu_fusion_attention(q, q, q, 8, "SBH", scale=0.1))
        causal = device_us(lambda: torch_npu.npu_fusion_attention(q, q, q, 8, "SBH", atten_mask=mask, scale=0.1,
                                                                  pre_tockens=65536, next_tockens=0, sparse_mode=4))
    assert 0.45 < causal / full < 0.65


def test_tensor_parallel_communication_shows_as_scheduled():
    estimator, _ = _modules()
    tp8 = _small(tp=8, sequence_parallel=True, mc2=False, global_batch=16)
    gemms = estimator.linear_gemm_seconds(tp8)
    plain = estimator.tensor_parallel_exposed_seconds(tp8, gemms)
    fused = estimator.tensor_parallel_exposed_seconds(dataclasses.replace(tp8, mc2=True), gemms)
    assert 0 < fused < plain
    # Behind GEMMs shorter than the collectives, longer GEMMs hide more of them; never all of them.
    shorter = {name: tuple(t / 20 for t in times) for name, times in gemms.items()}
    assert estimator.tensor_parallel_exposed_seconds(dataclasses.replace(tp8, mc2=True), shorter) > fused > 0
    assert estimator.tensor_parallel_exposed_seconds(dataclasses.replace(tp8, tp=1, npus=1), gemms) == 0


def test_overlap_hides_two_thirds_of_the_shorter_phase():
    from npusim.distributed import exposed_communication

    assert exposed_communication(437.3e-6, 371.6e-6) == pytest.approx(437.3e-6 - 0.668 * 371.6e-6)
    assert exposed_communication(1e-3, 0.0) == pytest.approx(1e-3)


def test_small_setup_is_estimated_end_to_end():
    estimator, _ = _modules()
    s = _small(pp=2, global_batch=32)
    r = estimator.estimate(s)
    assert r["step_s"] >= r["pipeline_s"] > 0
    assert r["tokens_per_s_per_npu"] == pytest.approx(s.global_batch * s.seq / r["step_s"] / s.npus)
    parts = r["breakdown"]
    assert sum(parts.values()) == pytest.approx(r["step_s"], rel=1e-6)
    assert parts["gemm"] > parts["attention"] > 0


def test_moe_layer_prices_grouped_experts_and_the_dispatchers_host_syncs():
    estimator, _ = _modules()
    from npusim import _C

    s = _small(experts=4, topk=2, ep=2, moe_grouped_gemm=True, global_batch=32)
    _C._reset_placement_report()
    estimator.stage_times(s)
    report = _C._placement_report()
    assert "npu::npu_grouped_matmul" in report["operators"]
    assert report["operators"]["npu::npu_grouped_matmul"]["ai_core"] >= 4  # two forward, input and weight gradients


def test_setups_carry_the_fused_flags_of_their_scripts():
    """ModelLink's LLaMA-7B/13B scripts have no fused rotary / SwiGLU flags (Megatron's aten kernels run);
    MindSpeed-LLM's mcore LLaMA-2-7B script turns all three fused kernels on."""
    _, setups = _modules()
    llama2 = setups.SETUPS["llama2-7b"]
    assert llama2.fused_rmsnorm and llama2.fused_rotary and llama2.fused_swiglu
    for key in ("llama-7b", "llama-13b"):
        assert setups.SETUPS[key].fused_rmsnorm
        assert not setups.SETUPS[key].fused_rotary and not setups.SETUPS[key].fused_swiglu


def test_unfused_norm_rotary_and_swiglu_cost_more_than_the_fused_kernels():
    estimator, _ = _modules()
    unfused = _small(fused_rmsnorm=False, fused_rotary=False, fused_swiglu=False)
    fused = dataclasses.replace(unfused, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True)
    assert estimator.stage_times(unfused)["layer"] > estimator.stage_times(fused)["layer"]


def test_unfused_layer_computes_what_the_fused_kernels_compute():
    """The layer the estimate prices is a real layer: Megatron's aten RMSNorm, rotary and SwiGLU compute
    what npu_rms_norm, npu_rotary_mul and npu_swiglu compute, on data."""
    estimator, _ = _modules()
    fused_setup = _small(width=64, heads=4, ffn=96, seq=16, micro_batch=2, fused_rmsnorm=True, fused_rotary=True,
                         fused_swiglu=True)
    unfused_setup = dataclasses.replace(fused_setup, fused_rmsnorm=False, fused_rotary=False, fused_swiglu=False)
    torch.manual_seed(0)
    fused = estimator.MegatronLayer(fused_setup).to("npu")
    unfused = estimator.MegatronLayer(unfused_setup).to("npu")
    unfused.load_state_dict(fused.state_dict())
    x = torch.randn(16, 2, 64, device="npu")
    angles = torch.randn(16, 1, 1, 8, device="npu")
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    mask = torch.triu(torch.ones(16, 16, dtype=torch.bool, device="npu"), 1)
    torch.testing.assert_close(unfused(x, cos, sin, mask).cpu(), fused(x, cos, sin, mask).cpu(), rtol=1e-4,
                               atol=1e-4)


def test_vocab_parallel_cross_entropy_matches_cross_entropy_and_its_gradient():
    estimator, _ = _modules()
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11, device="npu", requires_grad=True)
    target = torch.randint(0, 11, (2, 5), device="npu")
    loss = estimator.VocabParallelCrossEntropy.apply(logits.float(), target).mean()
    loss.backward()
    reference_logits = logits.detach().cpu().requires_grad_()
    reference = torch.nn.functional.cross_entropy(reference_logits.view(-1, 11), target.cpu().view(-1))
    reference.backward()
    torch.testing.assert_close(loss.detach().cpu(), reference.detach())
    torch.testing.assert_close(logits.grad.cpu(), reference_logits.grad)


def test_legacy_attention_path_adds_its_transposes_and_keeps_the_causal_band():
    """ModelLink's early-2024 path copies q, k, v to [b, s] and back to SBH (and their gradients): more time than
    the mcore path with a micro-batch above one, while the full S x S mask with sparse_mode 0 prices the same
    causal band as the compressed mask with sparse_mode 4."""
    estimator, _ = _modules()
    mcore = _small(seq=4096, micro_batch=2, global_batch=16)
    legacy = dataclasses.replace(mcore, legacy_attention=True)
    assert mcore.compressed_mask and not legacy.compressed_mask
    assert estimator.stage_times(legacy)["layer"] > estimator.stage_times(mcore)["layer"]
    full_mask = dataclasses.replace(mcore, full_mask=True)
    assert estimator.stage_times(full_mask)["classes"]["layer"]["attention"] == pytest.approx(
        estimator.stage_times(mcore)["classes"]["layer"]["attention"], rel=0.02)


def test_a_figure_measured_without_mc2_is_priced_without_it():
    estimator, setups = _modules()
    row = setups.SETUPS["llama3-8b"]
    assert row.mc2 and row.figure_without_mc2 and not row.mc2_active
    tp8 = _small(tp=8, sequence_parallel=True, mc2=True, global_batch=16)
    gemms = estimator.linear_gemm_seconds(tp8)
    off = estimator.tensor_parallel_exposed_seconds(dataclasses.replace(tp8, figure_without_mc2=True), gemms)
    assert off == pytest.approx(estimator.tensor_parallel_exposed_seconds(dataclasses.replace(tp8, mc2=False), gemms))
    assert off > estimator.tensor_parallel_exposed_seconds(tp8, gemms)


@pytest.mark.parametrize("environment, arguments, chip", [
    ({}, [], "Ascend910B3"),  # the published figures' NPU
    ({"NPUSIM_SOC": "Ascend910B2"}, [], "Ascend910B2"),
    ({}, ["--chip", "Ascend910B2"], "Ascend910B2"),
])
def test_estimate_scripts_simulate_the_published_npu_unless_told(environment, arguments, chip):
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "NPUSIM_SOC"}
    env.update(environment)
    result = subprocess.run([sys.executable, str(EXAMPLES / "resnet50_estimate.py"), "--batch", "2", *arguments],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert f"on an {chip}," in result.stdout
