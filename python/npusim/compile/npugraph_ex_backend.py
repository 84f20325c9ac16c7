"""The Dynamo backend named ``"npugraph_ex"`` and the ``npugraph_ex`` package behind it.

torch_npu registers ``"npugraph_ex"`` (entry point ``torch_npu.dynamo:_npugraph_ex_backend_entrypoint``):
TorchAir's light graph mode for inference, ``npugraph_ex.get_npu_backend`` with a
``CompilerConfig`` whose mode is ``"npugraph_ex"``. It rewrites the AOT graph with the FX
replacement patterns the program registered (``torch.npu.npugraph_ex.register_replacement``),
then captures it into an aclgraph (NPUGraph) on its second call and replays it after, with no
code generation: the npu kernels of the graph run as they are. npusim serves the package where
no real one is installed; the captured graphs follow reduce-overhead's rules
(npusim.compile.npu_graph_trees).

Options (``torch.compile(..., backend="npugraph_ex", options={...})``): ``clone_input`` (default
True) copies the inputs into the graph's own buffers on every replay; False captures over the
callers' tensors, so a call with inputs at other addresses captures a new graph. Other TorchAir
options are accepted and have no effect on the simulated chip (a warning names them).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Sequence

import torch

__all__ = ["BACKEND_NAME", "CompilerConfig", "compile_fx", "get_npu_backend", "register", "register_replacement",
           "npugraph_ex_backend"]

BACKEND_NAME = "npugraph_ex"
_OPTIONS_WITH_EFFECT = {"clone_input": bool}

_pattern_pass = None


def _patterns():
    """The pass that holds the replacements registered by the program (made on first use)."""
    global _pattern_pass
    if _pattern_pass is None:
        from torch._inductor.pattern_matcher import PatternMatcherPass

        _pattern_pass = PatternMatcherPass(pass_name="npugraph_ex_patterns")
    return _pattern_pass


def register_replacement(search_fn: Callable, replace_fn: Callable, example_inputs: Sequence[Any], trace_fn=None,
                         extra_check: Callable | None = None, search_fn_pattern=None, scalar_workaround=None,
                         skip_duplicates: bool = False) -> bool:
    """Replace every match of ``search_fn`` in graphs compiled by npugraph_ex with
    ``replace_fn`` (Inductor's pattern matcher, traced on ``example_inputs``)."""
    from torch._inductor import pattern_matcher

    return pattern_matcher.register_replacement(
        search_fn, replace_fn, list(example_inputs), trace_fn or pattern_matcher.fwd_only, _patterns(),
        extra_check=extra_check or (lambda match: True), search_fn_pattern=search_fn_pattern,
        scalar_workaround=scalar_workaround or {}, skip_duplicates=skip_duplicates)


class CompilerConfig:
    """npugraph_ex's compile options: ``mode`` (``"npugraph_ex"``) and ``options``."""

    def __init__(self) -> None:
        self.mode = BACKEND_NAME
        self.options: dict[str, Any] = {}


def _checked_options(options: dict | None) -> dict[str, Any]:
    from npusim._error_code import ErrCode, SubModule, error_suffix

    options = dict(options or {})
    for name, value in options.items():
        expected = _OPTIONS_WITH_EFFECT.get(name)
        if expected is not None and not isinstance(value, expected):
            raise TypeError(f"npugraph_ex option {name!r} must be {expected.__name__}, got {type(value).__name__}"
                            + error_suffix(SubModule.GRAPH, ErrCode.TYPE))
    ignored = sorted(set(options) - set(_OPTIONS_WITH_EFFECT))
    if ignored:
        warnings.warn(f"npugraph_ex options {', '.join(ignored)} have no effect on npusim's simulated chip", stacklevel=3)
    return options


def _static_inputs(count: int, clone_input: bool) -> Sequence[int]:
    """Inputs the graph captures over instead of copying: all of them without ``clone_input``,
    else the parameters and buffers AOTAutograd marks static."""
    if not clone_input:
        return range(count)
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context is not None else None
    return tuple(getattr(metadata, "static_input_indices", ()) or ())


def compile_fx(gm: torch.fx.GraphModule, example_inputs: Sequence[Any] | None = None, options: dict | None = None,
               *, mode: str | None = None):
    """Compile one AOT graph: apply the registered patterns, then capture and replay it as an
    NPUGraph (or run it as it is where a graph cannot hold it)."""
    from torch._dynamo.backends.cudagraphs import find_input_mutations, get_stack_traces
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    from npusim.compile import npu_graph_trees
    from npusim.compile.npugraphs_backend import check_for_skip, device_index

    options = _checked_options(options)
    example_inputs = list(example_inputs or ())
    if _pattern_pass is not None and _pattern_pass.apply(gm.graph):
        gm.graph.lint()
        gm.recompile()
    interpreter = boxed_nop(gm, example_inputs)
    static = _static_inputs(len(example_inputs), options.get("clone_input", True))
    skip = check_for_skip(gm, len(static) if isinstance(static, range) else 0)
    if skip:
        log_cudagraph_skip_and_bump_counter(f"skipping npugraph_ex capture due to {skip}")
        return interpreter
    if mode is None:
        mode = npu_graph_trees.INFERENCE if not torch.is_grad_enabled() else npu_graph_trees.FORWARD
    compiled = npu_graph_trees.npu_graphify(
        interpreter, static, tuple(sorted(find_input_mutations(gm.graph))), device_index=device_index(gm), mode=mode,
        stack_traces=get_stack_traces(gm))
    compiled._boxed_call = True
    return compiled


def get_npu_backend(*, compiler_config: CompilerConfig | None = None, custom_decompositions: dict | None = None):
    """A ``torch.compile`` backend: AOTAutograd, then :func:`compile_fx` for each graph."""
    config = compiler_config or CompilerConfig()

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict | None = None, **kwargs):
        from torch._dynamo.backends.common import aot_autograd

        from npusim.compile import npu_graph_trees

        merged = {**config.options, **(options or {})}
        compiler = functools.partial(compile_fx, options=merged)
        extra = {"decompositions": dict(custom_decompositions)} if custom_decompositions else {}
        aot = aot_autograd(
            fw_compiler=functools.partial(compiler, mode=npu_graph_trees.FORWARD),
            bw_compiler=functools.partial(compiler, mode=npu_graph_trees.BACKWARD),
            inference_compiler=functools.partial(compiler, mode=npu_graph_trees.INFERENCE),
            **extra,
        )
        return aot(gm, example_inputs)

    backend.compiler_config = config
    return backend


def npugraph_ex_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs):
    """The registered ``"npugraph_ex"`` backend (torch_npu's: a default config in mode npugraph_ex)."""
    return get_npu_backend(compiler_config=CompilerConfig())(gm, example_inputs, **kwargs)


def register() -> None:
    """Register ``"npugraph_ex"`` with Dynamo's backend registry; idempotent."""
    from npusim.compile.dynamo_backend import register_named

    register_named(BACKEND_NAME, npugraph_ex_backend)
