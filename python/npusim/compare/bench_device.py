"""The benchmark run: the same program on the CPU, in the program's own dtypes, without the
simulated NPU's numerics.

How the CPU run is produced (the choice ``npusim compare`` documents): the program runs
unchanged in a process where npusim is loaded (``torch.npu.*``, ``import torch_npu`` and
``autocast("npu")`` keep working) while a torch function mode sends every tensor the program
places on ``npu`` to the CPU instead:

- ``device="npu"`` / ``"npu:1"`` / ``torch.device("npu")`` / an integer device in any call, the
  positional device of ``Tensor.to``, and ``Tensor.npu()`` become the CPU; ``.to("npu")`` of a
  CPU tensor still copies (as the move to a device does), of a tensor already "on the npu"
  it does not;
- ``autocast("npu")`` then has nothing to cast (it only applies to npu tensors): the benchmark
  runs in the dtypes the program wrote, fp32 for an AMP program; HF32, saturation mode and the
  float64 rule are npu-kernel behaviours, so the CPU kernels have none of them;
- torch_npu's fused operators become their fp32 composites (:mod:`.composites`);
- random numbers: an operator that would have run on the npu draws from the npu generator's
  state (npusim's npu generator *is* a CPU generator state, seeded by ``torch.manual_seed`` as on
  the NPU run), so dropout masks and ``torch.randn(..., device="npu")`` equal the NPU run's.

Not covered: tensors made by ``torch.npu.FloatTensor(...)``-style constructors and storages stay
on the npu, ``Tensor.is_npu`` is False for the mapped tensors, and several processes
(torchrun) are not mapped to a CPU process group.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .composites import COMPOSITES, missing_composite

__all__ = ["NpuToCpuMode", "install_benchmark_device"]

_TAG = "_npusim_bench_on_npu"


def _is_npu_device(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "npu"
    if isinstance(value, str):
        return value == "npu" or value.startswith("npu:")
    return isinstance(value, int) and not isinstance(value, bool)


def _tagged(value: Any, depth: int = 0) -> bool:
    if isinstance(value, torch.Tensor):
        return getattr(value, _TAG, False)
    if depth < 2 and isinstance(value, (list, tuple)):
        return any(_tagged(item, depth + 1) for item in value)
    return False


def _tag(value: Any, depth: int = 0) -> None:
    if isinstance(value, torch.Tensor):
        try:
            setattr(value, _TAG, True)
        except (AttributeError, RuntimeError):
            pass
    elif depth < 2 and isinstance(value, (list, tuple)):
        for item in value:
            _tag(item, depth + 1)


def _original(value: Any) -> Any:
    """The function itself when the dump has wrapped it."""
    return getattr(value, "_npusim_compare_original", value)


def _random_functions() -> set[int]:
    import torch.nn.functional as functional
    import torch.nn.init as init

    found: set[int] = set()
    for root, names in (
        (torch, ("rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm", "normal",
                 "bernoulli", "multinomial", "poisson", "dropout", "alpha_dropout", "feature_alpha_dropout",
                 "feature_dropout", "native_dropout", "rrelu", "rrelu_", "dropout_")),
        (torch.Tensor, ("random_", "uniform_", "normal_", "bernoulli", "bernoulli_", "exponential_", "cauchy_",
                        "log_normal_", "geometric_", "multinomial")),
        (functional, ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                      "rrelu", "gumbel_softmax")),
        (init, ("uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                "kaiming_normal_", "orthogonal_", "sparse_")),
    ):
        for name in names:
            value = getattr(root, name, None)
            if value is not None:
                found.add(id(_original(value)))
    return found


class NpuToCpuMode(TorchFunctionMode):
    """Runs every call that would place a tensor on the npu on the CPU (see the module text)."""

    def __init__(self) -> None:
        super().__init__()
        self._random = _random_functions()
        self._npu_method = _original(getattr(torch.Tensor, "npu", None))
        self._to = _original(torch.Tensor.to)
        self._data_setter = torch.Tensor.data.__set__

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs) if kwargs else {}
        on_npu = False
        # A Python-level API reaches the mode through the dump's wrapper of it.
        identity = getattr(func, "_npusim_compare_original", func)
        if identity is self._npu_method or getattr(identity, "__name__", "") == "wrap_tensor_to":
            tensor = args[0]
            if _tagged(tensor):
                return tensor
            result = tensor.to("cpu", copy=True)
            _tag(result)
            return result
        device = kwargs.get("device")
        if device is not None and _is_npu_device(device):
            kwargs["device"] = "cpu"
            on_npu = True
        if identity is self._to and len(args) >= 2 and not isinstance(args[1], (torch.dtype, torch.Tensor)) \
                and _is_npu_device(args[1]):
            args = (args[0], "cpu", *args[2:])
            on_npu = True
        if on_npu and identity is self._to and not _tagged(args[0]):
            kwargs["copy"] = True
        generator = kwargs.get("generator")
        npu_generator = isinstance(generator, torch.Generator) and generator.device.type == "npu"
        inputs_on_npu = on_npu or npu_generator or _tagged(args) or _tagged(tuple(kwargs.values()))
        if identity is self._data_setter:
            result = func(*args, **kwargs)
            if len(args) >= 2 and _tagged(args[1]):
                _tag(args[0])
            return result
        if inputs_on_npu and id(identity) in self._random:
            if npu_generator:
                kwargs["generator"] = None
            result = self._with_npu_generator(func, args, kwargs, generator if npu_generator else None)
        else:
            result = func(*args, **kwargs)
        if inputs_on_npu:
            _tag(result)
        return result

    @staticmethod
    def _with_npu_generator(func, args, kwargs, generator):
        """Runs a random operator on the CPU with the npu generator's state, which it advances."""
        if generator is None:
            generator = torch.npu.default_generators[torch.npu.current_device()]
        saved = torch.get_rng_state()
        torch.set_rng_state(generator.get_state())
        try:
            return func(*args, **kwargs)
        finally:
            generator.set_state(torch.get_rng_state())
            torch.set_rng_state(saved)


def install_benchmark_device() -> NpuToCpuMode:
    """Turns this process into the benchmark: torch_npu's operators become their composites and
    the npu device the CPU. Returns the entered mode (it stays on for the program's lifetime)."""
    import torch_npu  # noqa: F401  (npusim's; its attributes are replaced below)

    module = sys.modules["torch_npu"]
    # Only torch_npu's kernels (torch.ops.npu operators) are replaced; its Python helpers
    # (npu_format_cast, ...) work on CPU tensors as they are.
    names = [name for name in dir(module)
             if name.startswith("npu_") and isinstance(getattr(module, name, None), torch._ops.OpOverloadPacket)]
    for name in names:
        replacement = COMPOSITES.get(name) or missing_composite(name)
        for namespace in (module, torch.ops.npu):
            try:
                setattr(namespace, name, replacement)
            except (AttributeError, TypeError):
                pass
    mode = NpuToCpuMode()
    mode.__enter__()
    return mode
