"""Random number generation of ``torch.npu``: one default generator per simulated device.

Seeding before the runtime is up is queued and applied at initialization (as in torch.cuda),
so ``torch.manual_seed`` at the top of a program does not start the runtime.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error
from npusim.npu._lazy import _lazy_call, _lazy_init
from npusim.npu.devices import current_device, device_count

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
]


def _generator(index: int) -> torch.Generator:
    return _C._default_generator(index)


def _index(device: Any) -> int:
    if isinstance(device, str):
        device = torch.device(device)
    elif isinstance(device, int) and not isinstance(device, bool):
        device = torch.device("npu", device)
    index = device.index
    if index is None:
        index = current_device()
    return index


def get_rng_state(device: int | str | torch.device = "npu") -> torch.Tensor:
    r"""Return the random number generator state of a device as a ByteTensor.

    Args:
        device (torch.device, str or int, optional): the device; default ``'npu'``, the current
            device.
    """
    _lazy_init()
    return _generator(_index(device)).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    r"""Return the random number generator states of all devices."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: torch.Tensor, device: int | str | torch.device = "npu") -> None:
    r"""Set the random number generator state of a device.

    Args:
        new_state (torch.ByteTensor): the desired state.
        device (torch.device, str or int, optional): the device; default ``'npu'``, the current
            device.
    """
    # Checked now, not when the queued call runs at initialization.
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
        raise TypeError(
            f"set_rng_state expects a torch.ByteTensor, got "
            f"{type(new_state).__name__ if not isinstance(new_state, torch.Tensor) else new_state.dtype}"
            + pta_error(ErrCode.TYPE)
        )
    with torch._C._DisableFuncTorch():
        state = new_state.clone(memory_format=torch.contiguous_format)

    def apply() -> None:
        _generator(_index(device)).set_state(state)

    _lazy_call(apply)


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    r"""Set the random number generator states of all devices, one state per device."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    r"""Seed the random number generator of the current device.

    Queued until the runtime initializes when called before.
    """
    seed = int(seed)

    def apply() -> None:
        _generator(current_device()).manual_seed(seed)

    _lazy_call(apply, seed=True)


def manual_seed_all(seed: int) -> None:
    r"""Seed the random number generators of all devices."""
    seed = int(seed)

    def apply() -> None:
        for i in range(device_count()):
            _generator(i).manual_seed(seed)

    _lazy_call(apply, seed_all=True)


def seed() -> None:
    r"""Seed the random number generator of the current device with a random number."""

    def apply() -> None:
        _generator(current_device()).seed()

    _lazy_call(apply)


def seed_all() -> None:
    r"""Seed the random number generators of all devices with one random number."""

    def apply() -> None:
        random_seed = 0
        seeded = False
        for i in range(device_count()):
            generator = _generator(i)
            if not seeded:
                generator.seed()
                random_seed = generator.initial_seed()
                seeded = True
            else:
                generator.manual_seed(random_seed)

    _lazy_call(apply)


def initial_seed() -> int:
    r"""Return the current random seed of the current device."""
    _lazy_init()
    return _generator(current_device()).initial_seed()


class _DefaultGenerators:
    """``torch.npu.default_generators``: a tuple-like view of the devices' default generators,
    built when first read (reading it initializes the runtime)."""

    def _all(self) -> tuple[torch.Generator, ...]:
        _lazy_init()
        return tuple(_generator(i) for i in range(device_count()))

    def __getitem__(self, index):
        return self._all()[index]

    def __len__(self) -> int:
        return device_count()

    def __iter__(self):
        return iter(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


default_generators = _DefaultGenerators()
