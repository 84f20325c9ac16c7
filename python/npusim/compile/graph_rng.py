"""Random numbers inside an NPUGraph: what a capture and its replays draw, as on the chip.

torch_npu's generators are graph-safe (NPUGeneratorImpl, after CUDA's): a capture does not
advance a generator; a random kernel in the graph reads the generator's seed and offset when the
graph *replays*, and each replay advances the generator by what the whole graph consumed. So
``manual_seed(s)`` then ``replay()`` draws exactly what the same operators draw eagerly after
``manual_seed(s)``, and two replays draw different numbers. Changing the seed while capturing is
refused ("NPUGeneratorImpl::set_current_seed can be called during stream capture only if new
seed is the same as the original seed."); restoring a state read during the capture (what
``torch.utils.checkpoint`` does to recompute a random forward) makes the replay draw those
numbers again.

npusim's generators hold a CPU generator's state (backend/device/NpuGenerator), and a capture
runs its operators. This module keeps that equivalent:

- the state of each generator a captured random operator uses is saved before its first use
  and put back at the end of the capture (the capture draws, the generator does not move);
- replay runs the random operators through their npu kernels, on the generators' live states,
  in capture order, so a replay consumes exactly what the capture consumed;
- ``torch.npu.get_rng_state`` / ``set_rng_state`` during the capture become replay steps: a
  read remembers the live state at that point of each replay, a write of a state read in the
  capture restores the remembered one (a write of any other state sets it as it is).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

__all__ = ["CaptureRng", "is_random_operator", "SEED_CHANGE_MESSAGE"]

SEED_CHANGE_MESSAGE = (
    "NPUGeneratorImpl::set_current_seed can be called during stream capture only if new seed is the "
    "same as the original seed."
)


def is_random_operator(func) -> bool:
    """Whether the operator draws from a generator (PyTorch tags those nondeterministic_seeded)."""
    return torch.Tag.nondeterministic_seeded in func.tags


def _seed_of_state(state: torch.Tensor) -> int:
    """The seed a generator state carries (npu states are CPU generator states)."""
    probe = torch.Generator()
    probe.set_state(state)
    return probe.initial_seed()


def _device_index(device: Any) -> int:
    index = torch.npu.current_device() if device is None else device
    if isinstance(index, str):
        index = torch.device(index)
    if isinstance(index, torch.device):
        index = index.index if index.index is not None else torch.npu.current_device()
    return int(index)


def _default_generator(device: Any) -> torch.Generator:
    return torch.npu.default_generators[_device_index(device)]


class _StateStep:
    """A replay step of the capture's get_rng_state / set_rng_state calls."""

    __slots__ = ("name", "replay", "_plan")

    def __init__(self, name: str, plan: str, replay: Callable[[], None]):
        self.name, self._plan, self.replay = name, plan, replay

    def plan(self, device: int) -> str:
        return self._plan


class CaptureRng:
    """The random-number bookkeeping of one capture (begin .. end) and its replays."""

    def __init__(self, record_step: Callable[[Any], None]):
        self._record_step = record_step
        # Generators used by the capture -> their state when the capture first used them. A
        # default generator is keyed by its device (each lookup gives a new Python object over
        # it), another by its object (kept alive here).
        self._saved: dict[Any, tuple[torch.Generator, torch.Tensor]] = {}
        # States read during the capture (generator key, bytes) -> the replay slot that
        # remembers them.
        self._slots: list[torch.Tensor | None] = []
        self._slot_of_state: dict[tuple[Any, bytes], int] = {}
        self._patched: list[tuple[Any, str, Any]] = []

    # -- generators used by the capture ------------------------------------------------------

    def note_operator(self, func, args: tuple, kwargs: dict, device: int) -> None:
        """Before a captured random operator runs: save the state of the generator it draws from."""
        generators = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Generator)]
        if not generators:
            self._save(("default", device), _default_generator(device))
        for generator in generators:
            if generator.device.type == "npu":
                self._save(id(generator), generator)

    def _save(self, key: Any, generator: torch.Generator) -> None:
        if key not in self._saved:
            self._saved[key] = (generator, generator.get_state())

    def restore(self) -> None:
        """End of the capture: every generator the capture used is where it was before (in
        reverse order: should two entries share a generator, the earliest state wins)."""
        for generator, state in reversed(list(self._saved.values())):
            generator.set_state(state)
        self._saved = {}

    # -- torch.npu's seeding and state calls while capturing -----------------------------------

    def install(self) -> None:
        npu = torch.npu
        self._patch(npu, "manual_seed", self._manual_seed)
        self._patch(npu, "manual_seed_all", self._manual_seed_all)
        self._patch(npu, "get_rng_state", self._get_rng_state)
        self._patch(npu, "set_rng_state", self._set_rng_state)

    def uninstall(self) -> None:
        for owner, attribute, original in reversed(self._patched):
            setattr(owner, attribute, original)
        self._patched = []

    def _patch(self, owner: Any, attribute: str, replacement: Callable[..., Any]) -> None:
        original = getattr(owner, attribute)
        self._patched.append((owner, attribute, original))
        setattr(owner, attribute, replacement)

    def _original(self, attribute: str) -> Callable[..., Any]:
        for _, name, original in self._patched:
            if name == attribute:
                return original
        raise AttributeError(attribute)

    @staticmethod
    def _check_seed(generator: torch.Generator, seed: int) -> None:
        # The chip's generators are graph-safe only for the seed the capture started with.
        if int(seed) & 0xFFFFFFFFFFFFFFFF != generator.initial_seed():
            raise RuntimeError(SEED_CHANGE_MESSAGE)

    def _manual_seed(self, seed: int) -> None:
        # Accepted with the same seed, and then a no-op (the generator keeps its offset).
        self._check_seed(_default_generator(None), seed)

    def _manual_seed_all(self, seed: int) -> None:
        for index in range(torch.npu.device_count()):
            self._check_seed(_default_generator(index), seed)

    def _get_rng_state(self, device: int | str | torch.device = "npu") -> torch.Tensor:
        index = _device_index(None if device == "npu" else device)
        generator = _default_generator(index)
        state = self._original("get_rng_state")(device)
        key = (("default", index), bytes(state.numpy().tobytes()))
        if key not in self._slot_of_state:
            slot = len(self._slots)
            self._slots.append(None)
            self._slot_of_state[key] = slot

            def remember() -> None:
                self._slots[slot] = generator.get_state()

            self._record_step(_StateStep("npu.get_rng_state", f"remember the generator state ({slot})", remember))
        return state

    def _set_rng_state(self, new_state: torch.Tensor, device: int | str | torch.device = "npu") -> None:
        index = _device_index(None if device == "npu" else device)
        generator = _default_generator(index)
        if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
            self._original("set_rng_state")(new_state, device)  # its own type error
            return
        self._check_seed(generator, _seed_of_state(new_state))
        self._save(("default", index), generator)
        self._original("set_rng_state")(new_state, device)
        # Host bytes, not tensor operators: those would join the capture.
        state_bytes = bytes(new_state.numpy().tobytes())
        slot = self._slot_of_state.get((("default", index), state_bytes))
        if slot is not None:

            def restore_remembered() -> None:
                generator.set_state(self._slots[slot])

            self._record_step(_StateStep("npu.set_rng_state", f"restore the generator state ({slot})",
                                         restore_remembered))
        else:
            fixed = torch.frombuffer(bytearray(state_bytes), dtype=torch.uint8)
            self._record_step(_StateStep("npu.set_rng_state", "set the generator state",
                                         lambda: generator.set_state(fixed)))
