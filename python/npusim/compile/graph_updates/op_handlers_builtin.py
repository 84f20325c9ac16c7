"""The built-in operator handlers of NPUGraph's automatic dispatch capture, as torch_npu
registers them: fused inference attention (v1 and v2, whose per-batch valid lengths change from
step to step) and paged / multi-head latent attention (whose context lengths do).

The functional form of fused inference attention is captured as its ``out=`` form into outputs
allocated up front, with the largest workspace any valid lengths can need, so that one kernel,
updated in place, serves every later set of lengths.
"""

from __future__ import annotations

import torch

from npusim.compile.graph_updates.op_handlers import NpuGraphOpHandler, register_npu_graph_handler

__all__: list[str] = []


class _TensorListOutHandler(NpuGraphOpHandler):
    """Operators whose ``out=`` is a list of tensors: the caller gets that list back."""

    @classmethod
    def postprocess_result(cls, result, kwargs):
        return kwargs["out"]


def _as_out_call(func, args, kwargs, name: str, output_keys: tuple[str, ...]):
    """``func`` (the functional form of ``name``) as its out= form: the workspace its arguments
    can need at most and outputs shaped as the functional form returns them."""
    family = getattr(torch.ops.npu, name)
    if func is family.out:
        return func, args, kwargs
    workspace = getattr(torch.ops.npu, f"_{name}_get_max_workspace")(*args, **kwargs)
    # The output shapes depend on the query and the value only (and these options).
    shaped = {key: kwargs[key] for key in output_keys if key in kwargs}
    output, softmax_lse = getattr(torch.ops.npu, f"_{name}_infer_output")(args[0], args[2], **shaped)
    kwargs = dict(kwargs)
    kwargs["workspace"] = workspace
    kwargs["out"] = [output, softmax_lse]
    return family.out, args, kwargs


def _specs(names, specs):
    return {name: list(specs) for name in names}


_IFA_V1 = ["npu_fused_infer_attention_score", "npu_fused_infer_attention_score.default",
           "npu_fused_infer_attention_score.out"]


@register_npu_graph_handler(_IFA_V1)
class _IFAv1DefaultHandler(_TensorListOutHandler):
    """npu_fused_infer_attention_score: the functional form is captured as ``.out``."""

    UPDATE_SPECS = _specs(_IFA_V1, [("arg", 5, "actual_seq_lengths"), ("arg", 6, "actual_seq_lengths_kv")])

    @classmethod
    def prepare_capture(cls, func, args, kwargs):
        return _as_out_call(func, args, kwargs, "npu_fused_infer_attention_score",
                            ("input_layout", "quant_scale2", "block_table", "num_heads", "num_key_value_heads",
                             "softmax_lse_flag", "query_rope"))


_IFA_V2 = ["npu_fused_infer_attention_score_v2", "npu_fused_infer_attention_score_v2.default",
           "npu_fused_infer_attention_score_v2.out"]


@register_npu_graph_handler(_IFA_V2)
class _IFAv2DefaultHandler(_TensorListOutHandler):
    """npu_fused_infer_attention_score_v2: the functional form is captured as ``.out``."""

    UPDATE_SPECS = _specs(_IFA_V2, [("arg", 7, "actual_seq_qlen"), ("arg", 8, "actual_seq_kvlen")])

    @classmethod
    def prepare_capture(cls, func, args, kwargs):
        return _as_out_call(func, args, kwargs, "npu_fused_infer_attention_score_v2",
                            ("query_dtype", "value_dtype", "input_layout", "quant_scale_out", "block_table",
                             "num_query_heads", "num_key_value_heads", "return_softmax_lse", "query_rope",
                             "out_dtype"))


@register_npu_graph_handler(["_npu_paged_attention.default", "npu_multi_head_latent_attention.out"])
class _SimpleGraphHandler(NpuGraphOpHandler):
    """Paged attention and multi-head latent attention: captured as issued (they write ``out``)."""

    UPDATE_SPECS = {
        "_npu_paged_attention.default": [("arg", 7, "context_lens")],
        "npu_multi_head_latent_attention.out": [("arg", 5, "context_lens")],
    }
