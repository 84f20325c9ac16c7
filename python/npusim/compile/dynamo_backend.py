"""The Dynamo backend named ``"npu"``: ``torch.compile(model, backend="npu")``.

torch_npu registers it when it loads (``torch_npu/dynamo/__init__.py``, and as the
``torch_dynamo_backends`` entry point ``npu``): TorchAir's default backend,
``torchair.get_npu_backend()`` with a default ``CompilerConfig`` (mode ``"max-autotune"``: the
whole graph compiled for the chip), created on first use and kept; where torch_npu was built
without TorchAir it registers a backend that runs the traced graph as it is, with a warning.
npusim always serves TorchAir (``npusim.compile._torchair``, unless a real one is installed),
so ``"npu"`` here is that default TorchAir backend: Inductor's npu backend, whose fused kernels
are priced on the simulated timeline. Registration waits for Dynamo's backend registry to load,
so that a program that never compiles imports nothing of Dynamo.
"""

from __future__ import annotations

import threading

__all__ = ["BACKEND_NAME", "npu_backend", "register", "register_named"]

BACKEND_NAME = "npu"

_lock = threading.Lock()
_backend = None


def _default_torchair_backend():
    """TorchAir's backend with its default configuration, made once (torch_npu keeps one per name)."""
    global _backend
    with _lock:
        if _backend is None:
            import torchair

            _backend = torchair.get_npu_backend(compiler_config=torchair.CompilerConfig())
        return _backend


def npu_backend(graph_module, example_inputs, **kwargs):
    """Compile a Dynamo graph as torch_npu's ``"npu"`` backend does."""
    return _default_torchair_backend()(graph_module, example_inputs, **kwargs)


def register_named(name: str, backend) -> None:
    """Register ``backend`` under ``name`` with Dynamo's backend registry; idempotent. A
    backend already registered under that name by someone else (a real torch_npu) is replaced,
    as torch_npu replaces an earlier registration of its own names."""
    from torch._dynamo.backends import registry

    if registry._COMPILER_FNS.get(name) is backend:
        return
    registry._BACKENDS.pop(name, None)
    registry._COMPILER_FNS.pop(name, None)
    registry.register_backend(compiler_fn=backend, name=name)


def register() -> None:
    """Register ``"npu"``."""
    register_named(BACKEND_NAME, npu_backend)
