"""msprobe's ``PrecisionDebugger`` on npusim's dump session (:class:`npusim.compare.hooks.DumpSession`).

As in msprobe 26.0.0: one instance per process (later constructions return it); ``config_path``
(default: msprobe's default configuration: task ``statistics``, ``./dump_path``, level L1), and
``task`` / ``dump_path`` / ``level`` / ``step`` overriding the file; ``start(model)`` (a model is
required at levels L0 and mix), ``stop()``, ``step()`` and ``set_init_step(step)``, callable on the
class or the instance. The dump is flushed at ``stop()`` / ``step()`` and when the process exits.

Under ``npusim compare`` the program's own debugger does nothing: the compare run dumps every
step itself.
"""

from __future__ import annotations

import atexit
import os
import random
import threading
from typing import Any

from npusim.compare.dump_config import DumpConfigError, load_dump_config, load_dump_config_file
from npusim.compare.hooks import DumpSession, active_session

__all__ = ["PrecisionDebugger", "MsprobeException", "seed_all", "module_dump", "module_dump_end"]


class MsprobeException(Exception):
    """msprobe's coded exception (its message prefixes, its codes)."""

    INVALID_PARAM_ERROR = 0
    OVERFLOW_NUMS_ERROR = 1
    RECURSION_LIMIT_ERROR = 2
    INTERFACE_USAGE_ERROR = 3
    UNSUPPORTED_TYPE_ERROR = 4
    INVALID_CHAR_ERROR = 5
    err_strs = {
        INVALID_PARAM_ERROR: "[msprobe] 无效参数：",
        OVERFLOW_NUMS_ERROR: "[msprobe] 超过预设溢出次数 当前溢出次数：",
        RECURSION_LIMIT_ERROR: "[msprobe] 递归调用超过限制：",
        INTERFACE_USAGE_ERROR: "[msprobe] Invalid interface usage: ",
        UNSUPPORTED_TYPE_ERROR: "[msprobe] Unsupported type: ",
        INVALID_CHAR_ERROR: "[msprobe] 存在非法字符：",
    }

    def __init__(self, code: int, error_info: str = "") -> None:
        super().__init__()
        self.code = code
        self.error_info = self.err_strs.get(code, "") + error_info

    def __str__(self) -> str:
        return self.error_info


_NOT_CREATED = "PrecisionDebugger instance is not created."


class PrecisionDebugger:
    _instance: "PrecisionDebugger | None" = None
    _lock = threading.Lock()

    def __new__(cls, *args: Any, **kwargs: Any) -> "PrecisionDebugger":
        with cls._lock:
            if cls._instance is None:
                instance = super().__new__(cls)
                instance.initialized = False
                cls._instance = instance
        return cls._instance

    def __init__(self, config_path: str | None = None, task: str | None = None, dump_path: str | None = None,
                 level: str | None = None, step: Any = None) -> None:
        if self.initialized:
            return
        for value, name in ((config_path, "config_path"), (dump_path, "dump_path")):
            if value is not None and not isinstance(value, str):
                raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, f"{name} must be a string")
        try:
            if config_path:
                if not os.path.isfile(config_path):
                    raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR,
                                           f"config_path {config_path} is not a file")
                config = load_dump_config_file(config_path, task=task, dump_path=dump_path, level=level, step=step)
            else:
                config = load_dump_config({}, task=task, dump_path=dump_path, level=level, step=step)
        except DumpConfigError as error:
            raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, str(error)) from None
        self.config = config
        self.task = config.task
        self.session = DumpSession(config)
        self.initialized = True
        atexit.register(self.session.stop)

    @classmethod
    def _get_instance(cls) -> "PrecisionDebugger":
        if cls._instance is None or not cls._instance.initialized:
            raise Exception(_NOT_CREATED)
        return cls._instance

    @classmethod
    def start(cls, model: Any = None, token_range: Any = None, rank_id: Any = None) -> None:
        instance = cls._get_instance()
        if active_session() is not None:
            return
        if token_range is not None:
            raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR,
                                   "token_range (inference token dumps) is not supported by npusim's msprobe")
        if instance.config.level in ("L0", "mix") and model is None:
            raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, "missing the parameter 'model'")
        if model is not None:
            import torch

            models = model if isinstance(model, (list, tuple)) else [model]
            for single in models:
                if not isinstance(single, torch.nn.Module):
                    raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR,
                                           f"model must be a torch.nn.Module or a list of them, got {type(single)}")
        instance.session.start(model)

    @classmethod
    def stop(cls) -> None:
        instance = cls._get_instance()
        if active_session() is None:
            instance.session.stop()

    @classmethod
    def step(cls) -> None:
        instance = cls._get_instance()
        if active_session() is None:
            instance.session.step()

    @classmethod
    def set_init_step(cls, step: int) -> None:
        instance = cls._get_instance()
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, f"{step} must be a non-negative integer")
        instance.session.init_step = step
        instance.session.loop = 0

    @classmethod
    def save(cls, variable: Any, name: str, save_backward: bool = True) -> None:
        """msprobe saves variables only at level ``debug``, which npusim does not serve: nothing
        is saved (as msprobe does at the other levels)."""
        cls._get_instance()


def module_dump(module: Any, dump_name: str) -> None:
    raise MsprobeException(MsprobeException.INTERFACE_USAGE_ERROR,
                           "module_dump is not supported by npusim's msprobe; use level L0 or mix with start(model)")


def module_dump_end() -> None:
    raise MsprobeException(MsprobeException.INTERFACE_USAGE_ERROR,
                           "module_dump_end is not supported by npusim's msprobe")


def seed_all(seed: int = 1234, mode: bool = False, rm_dropout: bool = False, is_enhanced: bool = False) -> None:
    """msprobe's ``seed_all``: Python, NumPy and torch (CPU and npu) seeds, deterministic
    algorithms when ``mode``, and every dropout's probability set to 0 when ``rm_dropout``."""
    import torch

    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2 ** 32 - 1:
        raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, "Seed must be integer between 0 and 2**32 - 1.")
    if not isinstance(mode, bool):
        raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, "seed_all mode must be bool.")
    if not isinstance(rm_dropout, bool):
        raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR, "The rm_dropout parameter must be bool.")
    if is_enhanced:
        raise MsprobeException(MsprobeException.INVALID_PARAM_ERROR,
                               "is_enhanced (random state fixation) is not supported by npusim's msprobe")
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(mode)
    torch.npu.manual_seed_all(seed)
    os.environ.update({"HCCL_DETERMINISTIC": "True", "LCCL_DETERMINISTIC": "1", "CLOSE_MATMUL_K_SHIFT": "1",
                       "ATB_LLM_LCOC_ENABLE": "0"})
    if rm_dropout:
        _remove_dropout()


def _remove_dropout() -> None:
    """Every functional dropout runs with p = 0 (msprobe's ``remove_dropout``)."""
    import functools

    import torch.nn.functional as functional

    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        original = getattr(functional, name, None)
        if original is None or getattr(original, "_msprobe_without_dropout", False):
            continue

        def without_dropout(input, p=0.5, training=True, inplace=False, _original=original):
            if p < 0.0 or p > 1.0:
                raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
            return _original(input, 0.0, training, inplace)

        functools.update_wrapper(without_dropout, original)
        without_dropout._msprobe_without_dropout = True
        setattr(functional, name, without_dropout)
