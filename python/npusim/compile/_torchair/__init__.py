"""``torchair`` served by npusim (only where no real torchair is installed).

TorchAir is Ascend's torch.compile backend: ``torch.compile(model,
backend=torchair.get_npu_backend(compiler_config=config))``. Its two modes map to npusim's
graph mode: ``"max-autotune"`` (whole-graph GE compilation on the chip) and
``"reduce-overhead"`` (aclgraph capture) both compile with npusim's Inductor npu backend, so
TorchAir code runs unchanged and its compiled graphs are priced as fused kernels;
``"reduce-overhead"`` also captures the compiled graphs into NPUGraphs and replays them, as
``torch.compile(mode="reduce-overhead")`` does (npusim.compile.npu_graph_trees).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["get_npu_backend", "CompilerConfig", "get_compiler"]


class _Options:
    """A group of TorchAir options: any attribute may be set (unknown ones are kept)."""

    def __init__(self, **defaults: Any):
        self.__dict__.update(defaults)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


class CompilerConfig:
    """TorchAir's compile options (``mode``, ``debug``, ``experimental_config``, ...)."""

    _MODES = ("max-autotune", "reduce-overhead", "npugraph_ex")

    def __init__(self) -> None:
        self.mode = "max-autotune"
        self.debug = _Options(graph_dump=_Options(type=None), aclgraph=_Options(disable_reinplace_inplaceable_ops_pass=False))
        self.experimental_config = _Options(frozen_parameter=False, tiling_schedule_optimize=False,
                                            static_model_ops_lower_limit=None, keep_inference_input_mutations=True)
        self.inference_config = _Options(dynamic_gears_merge_policy="zip")
        self.ge_config = _Options(enable_single_stream=False)
        self.aclgraph_config = _Options(use_custom_pool=None, disable_reinplace_input_mutated_ops_pass=False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "mode" and value not in self._MODES:
            from npusim._error_code import ErrCode, SubModule, error_suffix

            raise ValueError(
                f"CompilerConfig.mode must be one of {', '.join(self._MODES)}, got {value!r}"
                + error_suffix(SubModule.GRAPH, ErrCode.VALUE)
            )
        object.__setattr__(self, name, value)


def get_compiler(compiler_config: CompilerConfig | None = None) -> Callable:
    """The graph compiler of a backend: an FX graph and example inputs to a callable."""
    config = compiler_config or CompilerConfig()

    def compile_graph(graph_module, example_inputs):
        from torch._inductor import config as inductor_config
        from torch._inductor.compile_fx import compile_fx

        with inductor_config.patch({"triton.cudagraphs": config.mode == "reduce-overhead"}):
            return compile_fx(graph_module, example_inputs)

    compile_graph.compiler_config = config
    return compile_graph


def get_npu_backend(*, compiler_config: CompilerConfig | None = None, custom_decompositions: dict | None = None):
    """A ``torch.compile`` backend for npu graphs (npusim: Inductor's npu backend)."""
    if compiler_config is not None and compiler_config.mode == "npugraph_ex":
        # TorchAir's light graph mode (its successor of "reduce-overhead"): the npugraph_ex backend.
        import npugraph_ex

        return npugraph_ex.get_npu_backend(compiler_config=npugraph_ex.CompilerConfig(),
                                           custom_decompositions=custom_decompositions)
    compiler = get_compiler(compiler_config)
    if custom_decompositions:
        def with_decompositions(graph_module, example_inputs):
            from torch._inductor.compile_fx import compile_fx

            return compile_fx(graph_module, example_inputs, decompositions=dict(custom_decompositions))

        with_decompositions.compiler_config = compiler.compiler_config
        return with_decompositions
    return compiler
