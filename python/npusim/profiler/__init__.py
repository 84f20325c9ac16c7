"""``torch_npu.profiler`` on npusim (contract §19): ``profile``, ``schedule``,
``tensorboard_trace_handler``, ``ProfilerActivity`` (with ``NPU``), ``_ExperimentalConfig`` and its
enums, and ``analyse``. The device side comes from npusim's Kineto activity profiler
(``csrc/profiler``); the Ascend files are derived from the exported trace.

Honoured ``_ExperimentalConfig`` options: ``profiler_level`` (``Level_none`` records no device
activity), ``export_type`` (Text; Db is accepted and written as Text, with a warning),
``data_simplification`` (no raw data is ever kept). Accepted and recorded in
``profiler_info_{rank}.json`` but without effect on a simulator: ``aic_metrics``, ``l2_cache``,
``op_attr``, ``gc_detect_threshold``, ``sys_io``, ``sys_interconnection``, ``host_sys``,
``record_op_args``, ``msprof_tx``/``mstx`` (markers are always recorded).
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import warnings

import torch
import torch.profiler as _tp

from ._ascend_output import write_ascend_output
from ._trace import Trace  # noqa: F401

schedule = _tp.schedule
record_function = _tp.record_function


class ProfilerActivity:
    CPU = _tp.ProfilerActivity.CPU
    NPU = _tp.ProfilerActivity.PrivateUse1


class ProfilerLevel:
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"
    MemoryAccess = "MemoryAccess"


class ExportType:
    Text = "text"
    Db = "db"


class _ExperimentalConfig:
    def __init__(self, profiler_level=ProfilerLevel.Level0, aic_metrics=AiCMetrics.AiCoreNone, l2_cache=False,
                 op_attr=False, data_simplification=True, record_op_args=False, gc_detect_threshold=None,
                 export_type=None, msprof_tx=False, mstx=False, host_sys=None, sys_io=False,
                 sys_interconnection=False, mstx_domain_include=None, mstx_domain_exclude=None, **others):
        levels = (ProfilerLevel.Level_none, ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2)
        if profiler_level not in levels:
            raise ValueError(f"Invalid profiler_level {profiler_level!r}, expected one of {levels}")
        export_type = export_type if export_type is not None else [ExportType.Text]
        if isinstance(export_type, str):
            export_type = [export_type]
        if ExportType.Db in export_type:
            warnings.warn("npusim writes the text export only: export_type Db is written as Text.")
        self.profiler_level = profiler_level
        self.export_type = export_type
        self.data_simplification = data_simplification
        # Accepted, recorded, without effect on the simulator (no PMU, no raw CANN data).
        self.noted = {"aic_metrics": aic_metrics, "l2_cache": l2_cache, "op_attr": op_attr,
                      "record_op_args": record_op_args, "gc_detect_threshold": gc_detect_threshold,
                      "msprof_tx": msprof_tx, "mstx": mstx, "host_sys": host_sys, "sys_io": sys_io,
                      "sys_interconnection": sys_interconnection, **others}

    def device_enabled(self) -> bool:
        return self.profiler_level != ProfilerLevel.Level_none


def _worker_dir(dir_name: str, worker_name: str | None) -> str:
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
    stamp = datetime.datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]
    return os.path.join(dir_name, f"{worker}_{stamp}_ascend_pt")


def export_ascend(prof, root: str) -> str:
    """Writes the chrome trace of ``prof`` and the Ascend files under ``root``; returns ``root``."""
    os.makedirs(os.path.join(root, "ASCEND_PROFILER_OUTPUT"), exist_ok=True)
    trace_path = os.path.join(root, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    prof.export_chrome_trace(trace_path)
    rank = int(os.environ.get("RANK", "0"))
    write_ascend_output(trace_path, root, rank)
    config = getattr(prof, "_npu_experimental_config", None)
    meta = {"simulator": "npusim", "torch": torch.__version__, "experimental_config": config.noted if config else {}}
    try:
        props = torch.npu.get_device_properties(0)
        meta["device_capacity_bytes"] = int(props.total_memory)
        meta["chip"] = props.name
    except Exception:
        pass
    with open(os.path.join(root, "profiler_metadata.json"), "w") as f:
        json.dump(meta, f, indent=1, default=str)
    return root


def tensorboard_trace_handler(dir_name: str = "./", worker_name: str | None = None, analyse_flag: bool = True,
                              async_mode: bool = False):
    """on_trace_ready callback: one ``{worker}_{timestamp}_ascend_pt`` folder per trace."""
    if not isinstance(dir_name, str) or not dir_name:
        raise ValueError("ERR04003 PROF invalid value: dir_name must be a non-empty path string")

    def handler(prof) -> None:
        root = _worker_dir(dir_name, worker_name)
        export_ascend(prof, root)
        prof._npu_last_output = root

    return handler


class profile(_tp.profile):
    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, use_cuda=None, **kwargs):
        config = experimental_config or _ExperimentalConfig()
        if activities is None:
            activities = [ProfilerActivity.CPU, ProfilerActivity.NPU]
        activities = list(activities)
        if not config.device_enabled():
            activities = [a for a in activities if a != ProfilerActivity.NPU]
        super().__init__(activities=activities, schedule=schedule, on_trace_ready=on_trace_ready,
                         record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules, **kwargs)
        self._npu_experimental_config = config


def analyse(profiler_path: str, max_process_number: int | None = None, export_type=None) -> None:
    """Offline parsing: (re)writes ASCEND_PROFILER_OUTPUT of every ``*_ascend_pt`` folder under
    ``profiler_path`` (or of ``profiler_path`` itself) from its trace_view.json."""
    roots = [profiler_path] if profiler_path.endswith("_ascend_pt") else [
        os.path.join(profiler_path, d) for d in sorted(os.listdir(profiler_path)) if d.endswith("_ascend_pt")]
    if not roots:
        raise ValueError(f"ERR04003 PROF invalid value: no *_ascend_pt folder under {profiler_path}")
    for root in roots:
        trace = os.path.join(root, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
        if not os.path.isfile(trace):
            raise FileNotFoundError(f"{trace} not found: the folder holds no npusim profile")
        write_ascend_output(trace, root)


supported_activities = lambda: [ProfilerActivity.CPU, ProfilerActivity.NPU]  # noqa: E731

__all__ = ["profile", "schedule", "tensorboard_trace_handler", "ProfilerActivity", "_ExperimentalConfig",
           "ProfilerLevel", "AiCMetrics", "ExportType", "analyse", "record_function", "supported_activities"]
