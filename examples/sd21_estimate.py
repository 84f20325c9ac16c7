"""Estimate Stable Diffusion 2.1 fine-tuning throughput per Ascend NPU as Ascend's ModelZoo runs it, on any laptop.

The setup is the Ascend ModelZoo PyTorch diffusers recipe (``PyTorch/built-in/diffusion/diffusers0.18.1``, a fork of
diffusers 0.18.1): ``test/train_performance_8p_text_to_image_sd2-1_fp16_fa.sh`` runs
``examples/text_to_image/train_text_to_image.py`` on 8 NPUs with ``stabilityai/stable-diffusion-2-1`` at resolution
768, ``--gradient_checkpointing --use_ema --enable_npu_flash_attention --use_npu_fuse_adamW --mixed_precision fp16
--max_grad_norm 1``. One training step (the script's loop body):

- the fp32 pixels, already on the device (accelerate's data loader moves the batch while the script times data
  loading, which the logged FPS excludes), cast to fp16; the fp16 VAE encoder on the 768x768 images, the latent
  distribution's sample, times the scaling factor;
- noise, timesteps, the DDPM scheduler's ``add_noise`` and, SD 2.1 being a v-prediction model, ``get_velocity``;
- the fp16 OpenCLIP ViT-H text encoder (transformers 4.29.1 of the recipe's requirements: eager attention);
- the fp32 UNet under accelerate's fp16 autocast with gradient checkpointing as the fork places it: every ResNet
  block and every ``Transformer2DModel`` of the down and up blocks (``_release_part_gradient_checkpointing``
  False, the script's default), not the mid block; attention through the fork's ``NpuFlashAttnProcessor``
  (``npu_confusion_transpose`` to BNSD, ``npu_fusion_attention`` with the module's heads and scale, back with
  ``npu_confusion_transpose``), GEGLU as ``npu_geglu(approximate=1)``, the transformer blocks' LayerNorms with
  autocast off (fork ``models/attention.py``); its output cast to fp32 (accelerate), the fp32 MSE loss;
- the loss times the GradScaler's scale, backward; DDP copies each fp32 gradient into its bucket divided by the
  world size (``Reducer::copy_grad_to_bucket``: a ``mul_out`` each), all-reduces the buckets behind the backward and
  copies them back;
- accelerate's ``clip_grad_norm_``: the scaler's unscale (one non-finite check) and ``clip_grad_norm_`` (the
  norms, one multiply); the scaler's ``found_inf`` read; ``NpuFusedAdamW`` on the combined fp32 buffers
  (torch_npu ``optim/npu_fused_adamw.py``: nine element-wise passes); the scaler's update; ``zero_grad`` on the
  combined gradient;
- the loss gathered over the 8 ranks and read (``.item()``), the EMA step over every UNet parameter (diffusers
  0.18.1 ``EMAModel.step``: ``s.sub_(one_minus_decay * (s - p))``, three kernels a parameter), the loss read again.

Published (the recipe's README, "训练结果展示表", added with the performance script in c9c9cd7): Atlas 900 A2
PoDc, SD 2.1, FPS 74.02, batch_size 24, fp16 (competitor 73.8). FPS in the log is
``train_batch_size * num_processes / (step time - data time)``, averaged over logged steps 100-199: per NPU 9.25
images/s. The batch: the README's row says 24; the performance script's default is 4 (``--batch_size=`` overrides
it); the fp16+FA accuracy script ``train_full_8p_text_to_image_sd2-1_fp16_fa.sh`` runs 24; the earlier FA rows of
the same table (NPU 59.12 / 57, competitor 65.5 / 73.8) are all at 24, and 74.02 replaced the NPU's 57 beside the
competitor's 73.8 at 24. So the figure is taken at batch 24 with the performance script's flags; batch 4 is
printed beside it.

The recipe names the server only (Atlas 900 A2 PoDc); the script simulates its 20-core NPU, the 910B3, unless
``NPUSIM_SOC`` or ``--chip`` names another (megatron_estimate.PUBLISHED_NPU). The networks are built from the SD 2.1
configurations written below, with ``diffusers`` and ``transformers``: no weights are downloaded.

    npusim run examples/sd21_estimate.py [--batch 24] [--chip Ascend910B2]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

import npusim
from megatron_estimate import chip_argument, select_chip, timed_seconds  # examples/, beside this script

REPO = "xiaobingling93-pixel/Ascend-ModelZoo-PyTorch (mirror of Ascend/ModelZoo-PyTorch)"
COMMIT = "c9c9cd7ba220a2af2523bb3439cb8413220f6664"  # README row and performance script; unchanged at 415a03c
DIRECTORY = "PyTorch/built-in/diffusion/diffusers0.18.1"
DIFFUSERS_VERSION = "0.42.1"  # scripts/setup-tests.sh installs it

# stabilityai/stable-diffusion-2-1: unet/config.json, vae/config.json, text_encoder/config.json,
# scheduler/scheduler_config.json ("attention_head_dim" is diffusers' historical name for the heads per level).
UNET_CONFIG = dict(
    act_fn="silu", attention_head_dim=[5, 10, 20, 20], block_out_channels=[320, 640, 1280, 1280],
    center_input_sample=False, cross_attention_dim=1024,
    down_block_types=["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
    downsample_padding=1, flip_sin_to_cos=True, freq_shift=0, in_channels=4, layers_per_block=2,
    mid_block_scale_factor=1, norm_eps=1e-5, norm_num_groups=32, out_channels=4, sample_size=96,
    up_block_types=["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
    upcast_attention=True, use_linear_projection=True)
VAE_CONFIG = dict(
    act_fn="silu", block_out_channels=[128, 256, 512, 512], down_block_types=["DownEncoderBlock2D"] * 4,
    in_channels=3, latent_channels=4, layers_per_block=2, norm_num_groups=32, out_channels=3, sample_size=768,
    up_block_types=["UpDecoderBlock2D"] * 4, scaling_factor=0.18215)
TEXT_CONFIG = dict(
    vocab_size=49408, hidden_size=1024, intermediate_size=4096, num_hidden_layers=23, num_attention_heads=16,
    max_position_embeddings=77, hidden_act="gelu", layer_norm_eps=1e-5, projection_dim=512,
    bos_token_id=0, eos_token_id=2, pad_token_id=1)
# The scheduler config is a PNDMScheduler's; DDPMScheduler.from_pretrained keeps the keys it knows (these).
SCHEDULER_CONFIG = dict(
    beta_end=0.012, beta_schedule="scaled_linear", beta_start=0.00085, clip_sample=False, num_train_timesteps=1000,
    prediction_type="v_prediction", steps_offset=1, trained_betas=None)
TOKENS = 77  # the CLIP tokenizer pads every caption to model_max_length


@dataclasses.dataclass(frozen=True)
class DiffusionSetup:
    key: str
    name: str
    batch: int
    script: str
    reference_images_per_s: float  # per NPU
    resolution: int = 768
    npus: int = 8
    use_ema: bool = True
    release_part_gradient_checkpointing: bool = False

    @property
    def source(self) -> str:
        return f"{REPO} {DIRECTORY}/{self.script} and README.md @ {COMMIT}"


SETUPS = {
    "sd21": DiffusionSetup("sd21", "Stable Diffusion 2.1", 24,
                           "test/train_performance_8p_text_to_image_sd2-1_fp16_fa.sh", 74.02 / 8),
    # The performance script's default batch, the same figure: printed beside the row, not judged.
    "sd21-batch4": DiffusionSetup("sd21-batch4", "Stable Diffusion 2.1 (script default batch)", 4,
                                  "test/train_performance_8p_text_to_image_sd2-1_fp16_fa.sh", 74.02 / 8),
}


def diffusers_available() -> bool:
    try:
        import diffusers  # noqa: F401
    except ImportError:
        return False
    return True


class NpuFlashAttnProcessor:
    """The fork's ``NpuFlashAttnProcessor`` (``models/attention_processor.py``) with its ``head_to_batch_dim`` /
    ``batch_to_head_dim``: q, k, v projected, each ``npu_confusion_transpose``d to BNSD, ``npu_fusion_attention``
    with the module's heads and scale (dim_head ** -0.5), no mask, keep_prob 1, back to BSH the same way."""

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, temb=None,
                 *args, **kwargs):
        import torch_npu

        residual = hidden_states
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch, channel, height * width).transpose(1, 2)
        query = attn.to_q(hidden_states)
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        key, value = attn.to_k(context), attn.to_v(context)
        heads = attn.heads

        def head_to_batch_dim(t):
            b, s, d = t.shape
            return torch_npu.npu_confusion_transpose(t, [0, 2, 1, 3], (b, s, heads, d // heads), False)

        out = torch_npu.npu_fusion_attention(
            head_to_batch_dim(query), head_to_batch_dim(key), head_to_batch_dim(value), heads, input_layout="BNSD",
            pse=None, atten_mask=attention_mask, scale=attn.scale, pre_tockens=65536, next_tockens=65536,
            keep_prob=1.0, sync=False, inner_precise=0)[0]
        b, n, s, d = out.shape
        hidden_states = torch_npu.npu_confusion_transpose(out, [0, 2, 1, 3], (b, s, n * d), True)
        hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        return hidden_states / attn.rescale_output_factor


class _Checkpointed(nn.Module):
    """``torch.utils.checkpoint.checkpoint(module, ..., use_reentrant=False)`` around one module, as the fork's
    down and up blocks call it when the model trains with gradient checkpointing."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        if self.training and torch.is_grad_enabled():
            return torch.utils.checkpoint.checkpoint(self.module, *args, use_reentrant=False, **kwargs)
        return self.module(*args, **kwargs)


class _LayerNormAutocastOff(nn.LayerNorm):
    """The fork's BasicTransformerBlock runs norm1/norm2/norm3 under ``torch.cuda.amp.autocast(enabled=False)``
    (torch_npu's transfer_to_npu makes it the npu autocast): the LayerNorm sees the fp16 activations and the
    fp32 weights as they are, instead of autocast's fp32 upcast."""

    def forward(self, x):
        with torch.autocast("npu", enabled=False):
            return super().forward(x)


def _fork_geglu_forward(self, hidden_states, *args, **kwargs):
    """The fork's GEGLU: the projection, then ``torch_npu.npu_geglu(dim=-1, approximate=1)`` (tanh GELU)."""
    import torch_npu

    return torch_npu.npu_geglu(self.proj(hidden_states), dim=-1, approximate=1)[0]


def build_unet(s: DiffusionSetup, config: dict | None = None) -> nn.Module:
    """SD 2.1's UNet2DConditionModel (fp32) set up as train_text_to_image.py sets it up in the fork."""
    from diffusers import UNet2DConditionModel
    from diffusers.models.activations import GEGLU
    from diffusers.models.attention import BasicTransformerBlock

    unet = UNet2DConditionModel(**(config or UNET_CONFIG))
    unet.set_attn_processor(NpuFlashAttnProcessor())  # unet.enable_npu_flash_attention()
    for module in unet.modules():
        if isinstance(module, GEGLU):
            module.forward = _fork_geglu_forward.__get__(module)
        if isinstance(module, BasicTransformerBlock):
            for name in ("norm1", "norm2", "norm3"):
                norm = getattr(module, name, None)
                if type(norm) is nn.LayerNorm:
                    norm.__class__ = _LayerNormAutocastOff
    # unet.enable_gradient_checkpointing() in the fork (unet_2d_blocks.py): each ResNet block and each
    # Transformer2DModel of the down and up blocks in its own checkpoint; with _release_part_gradient_checkpointing
    # every other attention of a down block and every attention of an up block stays outside. The mid block is not
    # checkpointed.
    for index, block in enumerate(list(unet.down_blocks) + list(unet.up_blocks)):
        is_up = index >= len(unet.down_blocks)
        for position, resnet in enumerate(block.resnets):
            block.resnets[position] = _Checkpointed(resnet)
        for position, attention in enumerate(getattr(block, "attentions", None) or []):
            if s.release_part_gradient_checkpointing and (is_up or position % 2 == 0):
                continue
            block.attentions[position] = _Checkpointed(attention)
    return unet


def build_text_encoder() -> nn.Module:
    from transformers import CLIPTextConfig, CLIPTextModel

    return CLIPTextModel(CLIPTextConfig(**TEXT_CONFIG, attn_implementation="eager"))


PHASES = ("vae", "text", "unet_forward", "unet_backward", "ddp_buckets", "optimizer", "loss_read", "ema")


def step_seconds(s: DiffusionSetup, variants: tuple[int, ...] = (), warm_up: bool = True) -> dict:
    """Simulated seconds of one training step on one NPU (after a warm-up step unless `warm_up` is False: with the
    gradients in place the first step prices as the second, at half the host time), with its parts; the same step
    at each batch of `variants` under "variants" (the models are built once)."""
    from diffusers import AutoencoderKL, DDPMScheduler
    from npusim.distributed import exposed_communication

    scheduler = DDPMScheduler(**SCHEDULER_CONFIG)  # on the host, as the script builds it
    with npusim.estimate(), torch.device("npu"):
        vae = AutoencoderKL(**VAE_CONFIG).half()
        text_encoder = build_text_encoder().half()
        vae.requires_grad_(False)
        text_encoder.requires_grad_(False)
        unet = build_unet(s)
        unet.train()
        parameters = list(unet.parameters())
        count = sum(p.numel() for p in parameters)
        # NpuFusedAdamW combines the parameters, their gradients and its states into flat fp32 buffers
        # (npu_combine_tensors); DDP keeps its own flat buckets.
        flat_param = torch.empty(count)
        flat_grad = torch.empty(count)
        exp_avg, exp_avg_sq = torch.zeros(count), torch.zeros(count)
        buckets = torch.empty(count)
        # From the first step on each gradient is a view of the combined buffer (npu_combine_tensors re-points
        # them), zeroed by zero_grad, so the backward accumulates into it: so in the first step here too. DDP's
        # buckets hold a view per parameter as well.
        grads, bucket_views, offset = [], [], 0
        for p in parameters:
            p.grad = flat_grad[offset:offset + p.numel()].view_as(p)
            grads.append(p.grad)
            bucket_views.append(buckets[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        ema = [torch.empty_like(p) for p in parameters] if s.use_ema else []
        scale, growth_tracker, found_inf = torch.full((1,), 65536.0), torch.zeros(1, dtype=torch.int32), torch.zeros(1)
        lr, beta1, beta2, eps, weight_decay = 1e-5, 0.9, 0.999, 1e-8, 1e-2
        state = {"step": 0}

        def step(batch: int, marks: list):
            """train_text_to_image.py's loop body; `marks` gets an event after each phase."""

            def mark():
                event = torch.npu.Event(enable_timing=True)
                event.record()
                marks.append(event)

            pixels, input_ids = inputs[batch]
            mark()
            latents = vae.encode(pixels.to(torch.float16)).latent_dist.sample() * VAE_CONFIG["scaling_factor"]
            noise = torch.randn_like(latents)
            timesteps = torch.randint(0, 1000, (batch,), dtype=torch.long, device="cpu").to("npu")
            noisy = scheduler.add_noise(latents, noise, timesteps)
            target = scheduler.get_velocity(latents, noise, timesteps)
            mark()
            hidden = text_encoder(input_ids)[0]
            mark()
            # accelerate: the DDP module's forward under fp16 autocast, its outputs converted to fp32.
            with torch.autocast("npu", dtype=torch.float16):
                prediction = unet(noisy, timesteps, hidden).sample
            loss = F.mse_loss(prediction.float(), target.float(), reduction="mean")
            mark()
            (loss * scale).backward()  # GradScaler.scale
            mark()
            # DDP: Reducer::copy_grad_to_bucket (mul_out by 1 / world size) as the gradients are ready, the reduced
            # buckets copied back into the gradients at the end of the backward (gradient_as_bucket_view False).
            for grad, view in zip(grads, bucket_views):
                torch.mul(grad, 1.0 / s.npus, out=view)
            for grad, view in zip(grads, bucket_views):
                grad.copy_(view)
            mark()
            # accelerator.clip_grad_norm_: scaler.unscale_ (non-finite check and unscale), then clip_grad_norm_.
            # Both over unet.parameters(), the per-parameter gradients (torch.nn.utils.clip_grad_norm_'s foreach
            # path: the per-tensor norms, a norm of each, their norm, one foreach multiply).
            torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, 1.0 / scale)
            norms = torch._foreach_norm(grads, 2.0)
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(n, 2.0) for n in norms]), 2.0)
            torch._foreach_mul_(grads, torch.clamp(1.0 / (norm + 1e-6), max=1.0))
            found_inf.item()  # GradScaler.step skips the step if a rank found an inf
            # NpuFusedAdamW._group_step on the combined buffers.
            state["step"] += 1
            flat_param.mul_(1 - lr * weight_decay)
            exp_avg.mul_(beta1).add_(flat_grad, alpha=1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(flat_grad, flat_grad, value=1 - beta2)
            bias_correction1, bias_correction2 = 1 - beta1 ** state["step"], 1 - beta2 ** state["step"]
            denom = (exp_avg_sq.sqrt() / bias_correction2 ** 0.5).add_(eps)
            flat_param.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)
            torch._amp_update_scale_(scale, growth_tracker, found_inf, 2.0, 0.5, 2000)
            flat_grad.zero_()  # optimizer.zero_grad on the combined gradient
            mark()
            # accelerator.gather(loss.repeat(batch)).mean().item(): the all-gather is priced below.
            loss.repeat(batch).mean().item()
            mark()
            # EMAModel.step: one_minus_decay = 1 - min((1 + step) / (10 + step), 0.9999).
            for shadow, parameter in zip(ema, parameters):
                shadow.sub_((1 - 0.9999) * (shadow - parameter))
            loss.detach().item()  # the progress bar's step_loss
            mark()

        def run(batch: int, warm_up: bool = True) -> dict:
            if warm_up:
                step(batch, [])
            torch.npu.synchronize()
            marks = []
            step(batch, marks)
            marks[-1].synchronize()
            parts = {f"{name}_s": marks[i].elapsed_time(marks[i + 1]) / 1e3 for i, name in enumerate(PHASES)}
            device_step = marks[0].elapsed_time(marks[-1]) / 1e3
            allreduce = _collective_seconds("allreduce", count * 4, s.npus)
            # DDP all-reduces its buckets as the backward produces them: what shows is npusim's overlap model
            # against the backward.
            exposed = exposed_communication(allreduce, parts["unet_backward_s"])
            gather = _collective_seconds("allgather", 4 * batch * s.npus, s.npus)
            total = device_step + exposed + gather
            return {**parts, "device_step_s": device_step, "allreduce_s": allreduce, "allreduce_exposed_s": exposed,
                    "gather_s": gather, "step_s": total, "batch": batch, "images_per_s_per_npu": batch / total}

        inputs = {b: (torch.empty(b, 3, s.resolution, s.resolution),
                      torch.randint(0, TEXT_CONFIG["vocab_size"], (b, TOKENS))) for b in (s.batch, *variants)}
        result = run(s.batch, warm_up)
        result["parameters"] = count
        result["variants"] = {b: run(b, warm_up=False) for b in variants}  # warm from the first
    return result


def _collective_seconds(op: str, nbytes: float, npus: int) -> float:
    from npusim.distributed import price_collective

    return price_collective(op, int(nbytes), npus, 8)[0]


def describe(r: dict) -> str:
    """The step's time budget on one NPU."""
    return (f"VAE encode + noise {r['vae_s'] * 1e3:.0f} ms, text encoder {r['text_s'] * 1e3:.1f} ms, UNet forward "
            f"{r['unet_forward_s'] * 1e3:.0f} ms, backward (with recomputation) {r['unet_backward_s'] * 1e3:.0f} ms, "
            f"DDP buckets {r['ddp_buckets_s'] * 1e3:.1f} ms, clip + NpuFusedAdamW {r['optimizer_s'] * 1e3:.1f} ms, "
            f"EMA {r['ema_s'] * 1e3:.1f} ms, loss gather {r['gather_s'] * 1e3:.2f} ms + reads {r['loss_read_s'] * 1e3:.1f} ms, fp32 gradient "
            f"all-reduce {r['allreduce_s'] * 1e3:.0f} ms ({r['allreduce_exposed_s'] * 1e3:.1f} exposed); "
            f"step {r['step_s'] * 1e3:.0f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=SETUPS["sd21"].batch)
    chip_argument(parser)
    args = parser.parse_args()
    chip = select_chip(args.chip)
    if not diffusers_available():
        raise SystemExit(f"this example needs diffusers (pip install diffusers=={DIFFUSERS_VERSION})")
    s = dataclasses.replace(SETUPS["sd21"], batch=args.batch)
    started = time.perf_counter()
    r = step_seconds(s)
    print(f"{s.name} fine-tuning at {s.resolution}x{s.resolution} as ModelZoo runs it ({s.source}): batch {s.batch} "
          f"per NPU, fp16 autocast, NPU flash attention, gradient checkpointing, EMA, 8 NPUs; on an {chip}")
    print(f"  {describe(r)}")
    print(f"  -> {r['images_per_s_per_npu']:.2f} images/s per NPU, {s.npus * r['images_per_s_per_npu']:.1f} FPS for "
          f"{s.npus} (published: {s.reference_images_per_s:.2f} per NPU, 74.02 FPS at batch 24)")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()
