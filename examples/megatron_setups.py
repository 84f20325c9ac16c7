"""Published MindSpeed-LLM / ModelLink pretraining throughputs on Atlas 900 A2 PoDc (910B), each set up exactly
as the script it was measured with.

Source of every figure: the "性能" column (tokens/p/s, "现版本实测性能（硬件信息：Atlas 900 A2 PODc）") of the
README.md of Ascend/MindSpeed-LLM (formerly ModelLink, gitee.com/ascend/ModelLink) at the commit that introduced
the figure (``git log -S``); the settings are those of the model's pretraining script at that same commit
(repository Ascend/MindSpeed-LLM, file and commit in each entry). Each entry lists the flags that change the
work of a step; flags not listed (learning rate, data, logging) do not. Common to all: --use-flash-attn,
--disable-bias-linear (biases only where listed), --attention-dropout 0 --hidden-dropout 0, 8 NPUs in one server.
"""

from __future__ import annotations

import torch

from megatron_estimate import Setup

REPO = "Ascend/MindSpeed-LLM"


def _source(path: str, commit: str) -> str:
    return f"{REPO} {path} @ {commit}"


_ROWS = [
    # ------------------------------------------------------------------------------------------- LLaMA
    Setup(key="llama-7b", name="LLaMA-7B", family="LLaMA", reference_tokens_per_s=3600,
          source=_source("examples/llama/pretrain_llama_7b_ptd.sh", "1744e24ca2d3422a52796c4dcd0edf5a77c19a56"),
          layers=32, width=4096, heads=32, ffn=11008, vocab=32000, seq=2048, micro_batch=4, global_batch=256,
          tp=1, pp=8, dtype=torch.float16, fused_rmsnorm=True, gradient_accumulation_fusion=False, legacy_attention=True),
    Setup(key="llama-13b", name="LLaMA-13B", family="LLaMA", reference_tokens_per_s=1895,
          source=_source("examples/llama/pretrain_llama_13b_ptd.sh", "1744e24ca2d3422a52796c4dcd0edf5a77c19a56"),
          layers=40, width=5120, heads=40, ffn=13824, vocab=32000, seq=2048, micro_batch=1, global_batch=128,
          tp=1, pp=8, dtype=torch.float16, fused_rmsnorm=True, gradient_accumulation_fusion=False, legacy_attention=True),
    Setup(key="llama2-7b", name="LLaMA-2-7B", family="LLaMA", reference_tokens_per_s=4733,
          source=_source("examples/mcore/llama2/pretrain_llama2_7b_ptd.sh",
                         "a3a2128a83853f39975e3c5457648ddc511c03be"),
          layers=32, width=4096, heads=32, ffn=11008, vocab=32000, seq=4096, micro_batch=1, global_batch=256,
          tp=1, pp=2, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True, mc2=True,
          distributed_optimizer=True, overlap_grad_reduce=True, gradient_accumulation_fusion=False),
    Setup(key="llama2-13b", name="LLaMA-2-13B", family="LLaMA", reference_tokens_per_s=2209,
          source=_source("examples/mcore/llama2/pretrain_llama2_13b_ptd.sh",
                         "a3a2128a83853f39975e3c5457648ddc511c03be"),
          layers=40, width=5120, heads=40, ffn=13824, vocab=32000, seq=4096, micro_batch=4, global_batch=512,
          tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True, mc2=True,
          gradient_accumulation_fusion=False),
    # The commit that published 2400 (mcore, script with --use-mc2) replaced 2483, measured in April 2024 with the
    # non-mcore script without --use-mc2 (the row below). Its code sets args.use_mc2 = False in
    # validate_args_decorator (modellink/arguments.py) unless edited, and the figure says it ran so: with MC2 the
    # step would be 16% faster than without (npusim), yet the mcore figure is 3% below the no-MC2 one, while the
    # Qwen1.5 rows whose non-mcore scripts already had --use-mc2 rose 2-4% at their mcore commit a day later
    # (Qwen1.5-7B 2862 -> 2951). Its 123.5 model TFLOPS per NPU equal Qwen-7B's without MC2 (122.5), against
    # 141-145 for the TP8 MC2 rows of the same month (Qwen1.5-7B, Mistral-7B).
    Setup(key="llama3-8b", name="LLaMA-3-8B", family="LLaMA", reference_tokens_per_s=2400,
          source=_source("examples/mcore/llama3/pretrain_llama3_8b_ptd.sh",
                         "ec8b30496ce26c96014feff3c4f7ec966ab55830"),
          layers=32, width=4096, heads=32, kv_groups=8, ffn=14336, vocab=128256, seq=8192, micro_batch=2,
          global_batch=64, tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, mc2=True, gradient_accumulation_fusion=False, figure_without_mc2=True),
    # The same model with the non-mcore script of April 2024 (README row "LLaMA3 8B 1x8 BF16 2483" introduced by
    # a9f905b, still in the Atlas 900 A2 PODc table at 2b84f8f, the parent of ec8b304): no --use-mc2; ModelLink's
    # own FlashAttention (modellink/model/transformer.py @ a9f905b) in SBH with the full S x S mask, sparse_mode 0.
    Setup(key="llama3-8b-legacy", name="LLaMA-3-8B (non-mcore)", family="LLaMA", reference_tokens_per_s=2483,
          source=_source("examples/llama3/pretrain_llama3_8b_ptd.sh", "a9f905b63faf18781525a1dc8209503a6908c59b"),
          layers=32, width=4096, heads=32, kv_groups=8, ffn=14336, vocab=128256, seq=8192, micro_batch=2,
          global_batch=64, tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, gradient_accumulation_fusion=False, full_mask=True),
    Setup(key="llama3.2-1b", name="LLaMA-3.2-1B", family="LLaMA", reference_tokens_per_s=15408,
          source=_source("examples/mcore/llama32/pretrain_llama32_1b_8k_ptd.sh",
                         "8f507775a993fc1e56e7abee13641b3ecad1e311"),
          layers=16, width=2048, heads=32, kv_groups=8, ffn=8192, vocab=128256, tied_embeddings=True, seq=8192,
          micro_batch=2, global_batch=64, tp=1, pp=1, fused_rmsnorm=True, fused_swiglu=True, mc2=True,
          distributed_optimizer=True, gradient_accumulation_fusion=False),
    Setup(key="llama3.2-3b", name="LLaMA-3.2-3B", family="LLaMA", reference_tokens_per_s=6290,
          source=_source("examples/mcore/llama32/pretrain_llama32_3b_8k_ptd.sh",
                         "773a9c6b3b65e058869c492e588a0be1925a90ee"),
          layers=28, width=3072, heads=24, kv_groups=8, ffn=8192, vocab=128256, tied_embeddings=True, seq=8192,
          micro_batch=2, global_batch=64, tp=1, pp=2, fused_rmsnorm=True, fused_swiglu=True, mc2=True,
          distributed_optimizer=True, gradient_accumulation_fusion=False),
    # -------------------------------------------------------------------------------------------- Qwen
    Setup(key="qwen-7b", name="Qwen-7B", family="Qwen", reference_tokens_per_s=2499,
          source=_source("examples/qwen/pretrain_qwen_7b_ptd.sh", "b45a4eb9405f3ff4d78db65e9a684cc7599ee8d9"),
          layers=32, width=4096, heads=32, ffn=11008, vocab=151936, qkv_bias=True, seq=8192, micro_batch=2,
          global_batch=64, tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True,
          gradient_accumulation_fusion=False, legacy_attention=True),
    Setup(key="qwen1.5-0.5b", name="Qwen1.5-0.5B", family="Qwen", reference_tokens_per_s=23239,
          source=_source("examples/mcore/qwen15/pretrain_qwen15_0point5b_ptd.sh",
                         "f6dfaf4a1519efa53f21b7a17eda27fffceefba9"),
          layers=24, width=1024, heads=16, ffn=2816, vocab=151936, qkv_bias=True, tied_embeddings=True, seq=8192,
          micro_batch=1, global_batch=64, tp=1, pp=1, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True,
          mc2=True, distributed_optimizer=True, gradient_accumulation_fusion=False),
    Setup(key="qwen1.5-1.8b", name="Qwen1.5-1.8B", family="Qwen", reference_tokens_per_s=12603,
          source=_source("examples/mcore/qwen15/pretrain_qwen15_1point8b_ptd.sh",
                         "f6dfaf4a1519efa53f21b7a17eda27fffceefba9"),
          layers=24, width=2048, heads=16, ffn=5504, vocab=151936, qkv_bias=True, seq=8192, micro_batch=1,
          global_batch=64, tp=1, pp=1, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True, mc2=True,
          distributed_optimizer=True, overlap_grad_reduce=True, gradient_accumulation_fusion=False),
    Setup(key="qwen1.5-4b", name="Qwen1.5-4B", family="Qwen", reference_tokens_per_s=5221,
          source=_source("examples/mcore/qwen15/pretrain_qwen15_4b_ptd.sh",
                         "9955037bd41981f836acd506cfdcd80d843f9cf0"),
          layers=40, width=2560, heads=20, ffn=6912, vocab=151936, qkv_bias=True, seq=8192, micro_batch=1,
          global_batch=64, tp=1, pp=2, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True, mc2=True,
          distributed_optimizer=True, gradient_accumulation_fusion=False),
    Setup(key="qwen1.5-7b", name="Qwen1.5-7B", family="Qwen", reference_tokens_per_s=2951,
          source=_source("examples/mcore/qwen15/pretrain_qwen15_7b_ptd.sh",
                         "9955037bd41981f836acd506cfdcd80d843f9cf0"),
          layers=32, width=4096, heads=32, ffn=11008, vocab=151936, qkv_bias=True, seq=8192, micro_batch=2,
          global_batch=64, tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, mc2=True, gradient_accumulation_fusion=False),
    Setup(key="qwen1.5-14b", name="Qwen1.5-14B", family="Qwen", reference_tokens_per_s=1760,
          source=_source("examples/mcore/qwen15/pretrain_qwen15_14b_ptd.sh",
                         "9955037bd41981f836acd506cfdcd80d843f9cf0"),
          layers=40, width=5120, heads=40, ffn=13696, vocab=152064, qkv_bias=True, seq=8192, micro_batch=1,
          global_batch=64, tp=4, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, mc2=True, distributed_optimizer=True, gradient_accumulation_fusion=False),
    Setup(key="qwen2-0.5b", name="Qwen2-0.5B", family="Qwen", reference_tokens_per_s=28618,
          source=_source("examples/mcore/qwen2/pretrain_qwen2_0point5b_4K_ptd.sh",
                         "4d00313fbd0671f48a92192f36b45e2bc22400d6"),
          layers=24, width=896, heads=14, kv_groups=2, ffn=4864, vocab=151936, qkv_bias=True, tied_embeddings=True,
          seq=4096, micro_batch=2, global_batch=128, tp=1, pp=1, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, mc2=True, distributed_optimizer=True, overlap_grad_reduce=True,
          gradient_accumulation_fusion=False),
    Setup(key="qwen2-1.5b", name="Qwen2-1.5B", family="Qwen", reference_tokens_per_s=15456,
          source=_source("examples/mcore/qwen2/pretrain_qwen2_1point5b_4K_ptd.sh",
                         "cd878c44cb59517588e2c903ff5d602b7f8def4b"),
          layers=28, width=1536, heads=12, kv_groups=2, ffn=8960, vocab=151936, qkv_bias=True, tied_embeddings=True,
          seq=4096, micro_batch=2, global_batch=64, tp=1, pp=1, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, mc2=True, distributed_optimizer=True, overlap_grad_reduce=True,
          gradient_accumulation_fusion=False),
    Setup(key="qwen2-7b-4k", name="Qwen2-7B 4K", family="Qwen", reference_tokens_per_s=4034,
          source=_source("examples/mcore/qwen2/pretrain_qwen2_7b_4K_ptd.sh",
                         "9f8c96894d16f51c73eb97b355594688a1e955a1"),
          layers=28, width=3584, heads=28, kv_groups=4, ffn=18944, vocab=152064, qkv_bias=True, seq=4096,
          micro_batch=1, global_batch=256, tp=1, pp=2, fused_rmsnorm=True, fused_rotary=True, fused_swiglu=True,
          mc2=True, distributed_optimizer=True, overlap_grad_reduce=True, gradient_accumulation_fusion=False),
    Setup(key="qwen2-7b-32k", name="Qwen2-7B 32K", family="Qwen", reference_tokens_per_s=2040,
          source=_source("examples/mcore/qwen2/pretrain_qwen2_7b_32K_ptd.sh",
                         "9f8c96894d16f51c73eb97b355594688a1e955a1"),
          layers=28, width=3584, heads=28, kv_groups=4, ffn=18944, vocab=152064, qkv_bias=True, seq=32768,
          micro_batch=1, global_batch=64, tp=4, pp=2, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, gradient_accumulation_fusion=False),
    # ---------------------------------------------------------------------------------------- Baichuan
    Setup(key="baichuan2-7b", name="Baichuan2-7B", family="Baichuan", reference_tokens_per_s=2664,
          source=_source("examples/baichuan2/pretrain_baichuan2_ptd_7B.sh",
                         "46bc1b9dba3ed55e5663a966903db7652bdab909"),
          layers=32, width=4096, heads=32, ffn=11008, vocab=125696, seq=4096, micro_batch=4, global_batch=64,
          tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, gradient_accumulation_fusion=False, legacy_attention=True),
    # ---------------------------------------------------------------------------------------- InternLM
    Setup(key="internlm-7b", name="InternLM-7B", family="InternLM", reference_tokens_per_s=2776,
          source=_source("examples/intern/pretrain_internlm_7b_ptd.sh", "46bc1b9dba3ed55e5663a966903db7652bdab909"),
          layers=32, width=4096, heads=32, ffn=11008, vocab=103168, qkv_bias=True, dense_bias=True, seq=2048,
          micro_batch=8, global_batch=64, tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          gradient_accumulation_fusion=False, legacy_attention=True),
    # --------------------------------------------------------------------------------------------- GLM
    Setup(key="chatglm3-6b-8k", name="ChatGLM3-6B 8K", family="GLM", reference_tokens_per_s=4611,
          source=_source("examples/mcore/chatglm3/pretrain_chatglm3_6B_8K.sh",
                         "34d2bbb41211813e39339cef3065716f546d9f2a"),
          layers=28, width=4096, heads=32, kv_groups=2, ffn=13696, vocab=65024, qkv_bias=True, rotary_fraction=0.5,
          seq=8192, micro_batch=1, global_batch=128, tp=1, pp=2, dtype=torch.float16, fused_rmsnorm=True,
          fused_swiglu=True, distributed_optimizer=True, overlap_grad_reduce=True, overlap_param_gather=True,
          gradient_accumulation_fusion=False),
    Setup(key="glm4-9b-8k", name="GLM-4-9B 8K", family="GLM", reference_tokens_per_s=2221,
          source=_source("examples/mcore/glm4/pretrain_glm4_9b_8k_ptd.sh", "6827ff2bb175336638c190a36b22110f3d66e9a0"),
          layers=40, width=4096, heads=32, kv_groups=2, ffn=13696, vocab=151552, qkv_bias=True, rotary_fraction=0.5,
          seq=8192, micro_batch=1, global_batch=64, tp=2, pp=2, sequence_parallel=True, fused_rmsnorm=True,
          fused_swiglu=True, mc2=True, distributed_optimizer=True, overlap_grad_reduce=True,
          overlap_param_gather=True, gradient_accumulation_fusion=False),
    # ----------------------------------------------------------------------------------------- Mistral
    Setup(key="mistral-7b-32k", name="Mistral-7B 32K", family="Mistral", reference_tokens_per_s=2900,
          source=_source("examples/mcore/mistral/pretrain_mistral_7b_ptd.sh",
                         "a780cb5953348e4d6e0df57a68fcfbc85b2c3652"),
          layers=32, width=4096, heads=32, kv_groups=8, ffn=14336, vocab=32000, sliding_window=4096, seq=32768,
          micro_batch=1, global_batch=32, tp=8, pp=1, sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, mc2=True, distributed_optimizer=True, overlap_grad_reduce=True,
          gradient_accumulation_fusion=False),
    # ------------------------------------------------------------------------------------------- Gemma
    Setup(key="gemma-2b", name="Gemma-2B", family="Gemma", reference_tokens_per_s=7067,
          source=_source("examples/mcore/gemma/pretrain_gemma_2b_ptd.sh", "696d907f35aca40a40751c08c104b3cfe128cc2e"),
          layers=18, width=2048, heads=8, kv_groups=1, head_dim=256, ffn=16384, vocab=256000, activation="geglu",
          tied_embeddings=True, embedding_scale=True, seq=8192, micro_batch=1, global_batch=256, tp=1, pp=2,
          fused_rmsnorm=True, fused_rotary=True, mc2=True, distributed_optimizer=True,
          gradient_accumulation_fusion=False),
    Setup(key="gemma-7b", name="Gemma-7B", family="Gemma", reference_tokens_per_s=2939,
          source=_source("examples/mcore/gemma/pretrain_gemma_7b_ptd.sh", "7bb74c79c29402e4999761e06a842909e9166a3f"),
          layers=28, width=3072, heads=16, head_dim=256, ffn=24576, vocab=256000, activation="geglu",
          tied_embeddings=True, embedding_scale=True, seq=8192, micro_batch=2, global_batch=64, tp=8, pp=1,
          sequence_parallel=True, fused_rmsnorm=True, fused_rotary=True, mc2=True,
          gradient_accumulation_fusion=False),
    # ----------------------------------------------------------------------------------------- MiniCPM
    Setup(key="minicpm-2b", name="MiniCPM-2B", family="MiniCPM", reference_tokens_per_s=7314,
          source=_source("examples/mcore/minicpm/pretrain_minicpm_2b.sh", "edc8ed518171a0e70deb9146d89fe322768bed7b"),
          layers=40, width=2304, heads=36, ffn=5760, vocab=122753, tied_embeddings=True, embedding_scale=True,
          depth_scale=True, logit_scale=True, seq=4096, micro_batch=2, global_batch=32, tp=1, pp=1, fused_rmsnorm=True, fused_rotary=True,
          fused_swiglu=True, distributed_optimizer=True, overlap_grad_reduce=True, gradient_accumulation_fusion=False),
    Setup(key="minicpm-moe-8x2b", name="MiniCPM-MoE-8x2B", family="MiniCPM", reference_tokens_per_s=2981,
          source=_source("examples/mcore/minicpm/pretrain_minicpm_8x2b.sh", "edc8ed518171a0e70deb9146d89fe322768bed7b"),
          layers=40, width=2304, heads=36, ffn=5760, vocab=122753, tied_embeddings=True, embedding_scale=True,
          depth_scale=True, logit_scale=True, experts=8, topk=2, seq=4096, micro_batch=1, global_batch=128, tp=1, pp=4, ep=2, fused_rmsnorm=True,
          fused_rotary=True, fused_swiglu=True, moe_grouped_gemm=True, distributed_optimizer=True,
          overlap_grad_reduce=True, overlap_param_gather=True, gradient_accumulation_fusion=False),
]

SETUPS = {row.key: row for row in _ROWS}
