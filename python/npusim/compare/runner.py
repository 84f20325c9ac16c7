"""One run of the program for ``npusim compare``, in its own process:
``python -m npusim.compare.runner SPEC.json``.

The spec names the role (``npu``: the simulated NPU with its numerics; ``bench``: the CPU
benchmark, :mod:`.bench_device`), the program and its arguments, and the dump (path, task, level,
``list``). The program runs as ``python SCRIPT ARGS`` would (``sys.argv``, ``__main__``, the
script's folder first on ``sys.path``) under a dump session that discovers the program's models
and ends a step at each ``optimizer.step()`` (or ``GradScaler.step()``); after ``steps`` steps
the program is stopped. ``run_info.json`` in the dump folder records how it ended and the losses.
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import sys
import traceback
from typing import Any

__all__ = ["main", "NumericsProbe", "RUN_INFO_FILE"]

RUN_INFO_FILE = "run_info.json"


class NumericsProbe:
    """The switches of the simulated NPU's numerics a call runs under (kept in
    npusim_numerics.json so that the explanation can re-run the call the same way)."""

    def __init__(self, role: str) -> None:
        self.role = role

    def record(self) -> dict[str, Any]:
        import torch

        record: dict[str, Any] = {}
        if torch.is_autocast_enabled("npu"):
            record["autocast"] = str(torch.get_autocast_dtype("npu"))
        hf32 = [bool(torch.npu.matmul.allow_hf32), bool(torch.npu.conv.allow_hf32)]
        if hf32 != [False, False]:
            record["hf32"] = hf32
        return record

    def header(self) -> dict[str, Any]:
        import torch

        header: dict[str, Any] = {"role": self.role}
        try:
            header["overflow_mode"] = "INF_NAN" if torch.npu.utils.is_support_inf_nan() else "saturation"
        except Exception:
            pass
        try:
            header["soc"] = torch.npu.get_device_name(0)
        except Exception:
            pass
        return header


def _install_step_boundaries(session) -> None:
    """A step ends at every ``optimizer.step()``; ``GradScaler.step`` counts once, whether it ran
    the optimizer or skipped it for an overflow (so both runs keep the same step numbers)."""
    import torch

    state = {"inside_scaler": 0}

    def after_optimizer_step(optimizer, args, kwargs):
        if state["inside_scaler"] == 0:
            session.mark_step_boundary()

    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(after_optimizer_step)
    scaler_class = getattr(torch.amp, "GradScaler", None)
    if scaler_class is None:
        return
    original_step = scaler_class.step

    @functools.wraps(original_step)
    def scaler_step(scaler, optimizer, *args, **kwargs):
        state["inside_scaler"] += 1
        try:
            result = original_step(scaler, optimizer, *args, **kwargs)
        finally:
            state["inside_scaler"] -= 1
        if state["inside_scaler"] == 0:
            session.mark_step_boundary()
        return result

    scaler_class.step = scaler_step


def _run_program(script: str, arguments: list[str]) -> tuple[int, str | None]:
    from .hooks import StepLimitReached

    sys.argv = [script, *arguments]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except StepLimitReached:
        return 0, None
    except SystemExit as exit:
        code = exit.code
        if code is None:
            return 0, None
        if isinstance(code, int):
            return code, None
        return 1, str(code)
    except BaseException:
        return 1, traceback.format_exc()
    return 0, None


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) != 1:
        print("usage: python -m npusim.compare.runner SPEC.json", file=sys.stderr)
        return 2
    with open(arguments[0], encoding="utf-8") as handle:
        spec = json.load(handle)
    import torch
    import npusim  # noqa: F401  (registers the npu device and torch_npu)
    import torch_npu  # noqa: F401

    from .dump_config import load_dump_config
    from .hooks import DumpSession, set_active_session
    from .loss_recorder import LossRecorder

    role = spec["role"]
    # Memory from torch.empty holds whatever was there before: with msprobe's dump of in-place
    # initialisers (normal_, fill_) the two runs would differ in garbage. Both runs fill new
    # memory (NaN, or the largest integer) as PyTorch's deterministic mode does, on CPU and npu
    # alike; operators without a deterministic version only warn.
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    seed = spec.get("seed")
    if seed is not None:
        torch.manual_seed(int(seed))
    if role == "bench":
        from .bench_device import install_benchmark_device

        install_benchmark_device()
    config = load_dump_config({
        "task": spec.get("task", "statistics"), "dump_path": spec["dump_path"], "level": spec.get("level", "mix"),
        "risk_level": "ALL", "extra_info": True, "step": spec.get("dump_steps"),
        spec.get("task", "statistics"): {"list": spec.get("list", []), "data_mode": ["all"]},
    })
    session = DumpSession(config, numerics_probe=NumericsProbe(role), discover_models=True)
    if role == "bench":
        # The benchmark's "npu" tensors live on the CPU: their devices are written as the NPU run's.
        session.summarizer.device_text = (
            lambda device: f"npu:{torch.npu.current_device()}" if device.type == "cpu" else f"{device.type}:{device.index}")
    session.step_limit = spec.get("steps")
    set_active_session(session)
    recorder = LossRecorder(lambda: session.current_step, session.internal)
    recorder.install()
    _install_step_boundaries(session)
    os.makedirs(config.dump_path, exist_ok=True)
    session.start()
    exit_code, error = _run_program(spec["script"], list(spec.get("args", [])))
    steps_done = session.loop
    session.stop()
    session.close()
    recorder.uninstall()
    set_active_session(None)
    info = {"role": role, "exit_code": exit_code, "error": error, "steps_completed": steps_done,
            "step_limit": spec.get("steps"), "losses": recorder.points}
    with open(os.path.join(config.dump_path, RUN_INFO_FILE), "w", encoding="utf-8") as handle:
        json.dump(info, handle, indent=1)
    if error:
        sys.stderr.write(error if error.endswith("\n") else error + "\n")
    sys.stdout.flush()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
