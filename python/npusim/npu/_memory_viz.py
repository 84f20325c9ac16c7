"""``torch.npu._memory_viz``: the memory-snapshot visualiser.

The snapshots of ``torch.npu.memory._snapshot`` / ``_dump_snapshot`` have the layout of CUDA's,
as torch_npu's do, so PyTorch's own visualiser reads them; torch_npu ships it under this name.
torch_npu's module also carries the visualiser's frame and block helpers (``_frame_fmt``,
``_frame_filter``, ``_frames_fmt``, ``_block_extra``, ``_block_extra_legacy``,
``_write_blocks``), which code and tests written for torch_npu import from here; they are
PyTorch's, whose text they write.
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
from torch.cuda._memory_viz import (  # noqa: F401  (torch_npu's module exposes these helpers)
    _block_extra,
    _block_extra_legacy,
    _frame_filter,
    _frame_fmt,
    _frames_fmt,
    _write_blocks,
)
