"""``torch_npu.profiler``: npusim's profiler (``npusim.profiler``) under torch_npu's public names."""

from npusim.profiler import *  # noqa: F401,F403
from npusim.profiler import _ExperimentalConfig, analyse  # noqa: F401
from npusim.profiler import (
    AiCMetrics,
    ExportType,
    ProfilerActivity,
    ProfilerLevel,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

from .._public_names import expose as _expose

# torch_npu's list (ProfilerActivity and _ExperimentalConfig keep their own modules, as in torch_npu).
__all__ = ["profile", "ProfilerActivity", "supported_activities", "tensorboard_trace_handler", "schedule",
           "_ExperimentalConfig", "ProfilerLevel", "AiCMetrics", "ExportType"]

profile = _expose(profile, __name__ + ".profiler")  # torch_npu defines it in torch_npu.profiler.profiler
supported_activities = _expose(supported_activities, __name__)
tensorboard_trace_handler = _expose(tensorboard_trace_handler, __name__)
schedule = _expose(schedule, __name__)
ProfilerLevel = _expose(ProfilerLevel, __name__)
AiCMetrics = _expose(AiCMetrics, __name__)
ExportType = _expose(ExportType, __name__)

from . import profiler  # noqa: E402,F401  (torch_npu.profiler.profiler.analyse)
