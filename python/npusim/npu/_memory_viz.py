"""``torch.npu._memory_viz``: the memory-snapshot visualiser.

The snapshots of ``torch.npu.memory._snapshot`` / ``_dump_snapshot`` have the layout of CUDA's,
as torch_npu's do, so PyTorch's own visualiser reads them; torch_npu ships it under this name.
"""

from torch.cuda._memory_viz import *  # noqa: F401,F403
from torch.cuda._memory_viz import (  # noqa: F401
    compare,
    format_flamegraph,
    memory,
    profile_plot,
    segment_plot,
    segments,
    trace,
    trace_plot,
)
