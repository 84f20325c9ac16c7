"""``torch_npu``, served by npusim.

Programs written for Ascend (``import torch_npu``, ``torch_npu.npu.*``,
``from torch_npu.contrib import transfer_to_npu``) run unchanged on the simulated NPU: npusim's
import hooks load this package under the name ``torch_npu`` when no real torch_npu is installed,
also as a program's first line (it imports torch, as the real package does).
``torch_npu.npu`` is the same module object as ``torch.npu``.
"""

import os
import sys

_npusim_served = True  # npusim's own torch_npu (not a real one next to npusim)

import torch  # noqa: E402

import npusim  # noqa: E402  (registers the npu device; a no-op when autoload already did)
import npusim.npu as npu  # noqa: E402
from npusim import _autoload  # noqa: E402,F401
from npusim.npu.formats import (  # noqa: E402,F401
    Format,
    empty_with_format,
    get_npu_format,
    get_storage_size,
    npu_change_data_ptr,
    npu_format_cast,
    npu_format_cast_,
)

from npusim.npu.allocator_controls import empty_with_swapped_memory, erase_stream  # noqa: E402,F401

from . import _C, utils  # noqa: E402,F401
from . import profiler  # noqa: E402,F401  (torch_npu.profiler; torch_npu.npu.mstx below)
from npusim.npu import mstx as _mstx  # noqa: E402
from .version import __version__  # noqa: E402

sys.modules[__name__ + ".npu"] = npu
sys.modules[__name__ + ".npu.mstx"] = _mstx

__all__ = [
    "npu",
    "Format",
    "npu_format_cast",
    "npu_format_cast_",
    "get_npu_format",
    "empty_with_format",
    "get_storage_size",
    "npu_change_data_ptr",
    "empty_with_swapped_memory",
    "erase_stream",
    "__version__",
]


# TORCH_NPU_SANITIZER (set to anything) turns torch_npu's NPU sanitizer on at import.
if "TORCH_NPU_SANITIZER" in os.environ:
    from npusim.npu import _sanitizer

    _sanitizer.enable_npu_sanitizer()

# Public names report torch_npu's module (PyTorch's public-API rule, which torch_npu tests).
from ._public_names import expose as _expose  # noqa: E402

for _name in ("Format", "npu_format_cast", "npu_format_cast_", "get_npu_format", "empty_with_format",
              "get_storage_size", "npu_change_data_ptr", "empty_with_swapped_memory", "erase_stream"):
    globals()[_name] = _expose(globals()[_name], __name__)
del _name

# torch_npu.npu.graphs, and its NPUGraph debugging operators (torch.ops.npu.print_npugraph_tensor,
# save_npugraph_tensor), defined before the operators are exported below.
from npusim.compile import graph_debug_ops as _graph_debug_ops  # noqa: E402

_graph_debug_ops.register()
from . import _npu_graphs  # noqa: E402

sys.modules[__name__ + ".npu.graphs"] = _npu_graphs
npu.graphs = _npu_graphs  # torch_npu.npu is npusim.npu: `import torch_npu.npu.graphs` reads the attribute
from npusim.compile import graph_conditionals as _graph_conditionals  # noqa: E402

sys.modules[__name__ + ".npu._npugraph_conditional_nodes"] = _graph_conditionals
from npusim.compile import graph_tree as _graph_tree  # noqa: E402

sys.modules[__name__ + ".npu._graph_tree"] = _graph_tree
npu._graph_tree = _graph_tree
_graph_tree._C = _C  # the trees call their bindings through torch_npu._C, as torch_npu's do

# NPUGraph updates: the operator handlers of automatic dispatch capture, the update plans of
# compiled code and Inductor's writer of them, under torch_npu's module names (the Inductor one
# without importing torch_npu._inductor, which loads Dynamo).
from npusim.compile.graph_updates import update_plan as _update_plan  # noqa: E402
from npusim.compile.graph_updates import update_plan_codegen as _update_plan_codegen  # noqa: E402
from npusim.compile.graph_updates import op_handlers as _graph_op_handlers  # noqa: E402
from npusim.compile.graph_updates import op_handlers_builtin as _graph_op_handlers_builtin  # noqa: E402
from npusim.compile import graph_trace_align as _graph_trace_align  # noqa: E402

for _module_name, _module in (
    (".npu._npugraph_handlers", _graph_op_handlers_builtin),
    (".npu._npugraph_utils", _graph_trace_align),
    (".npu._npugraph_handlers.npugraph_handler", _graph_op_handlers),
    (".npu._aclgraph_update_plan", _update_plan),
    (".npu._aclgraph_update_plan.resolver", _update_plan),
    ("._inductor._aclgraph_update_plan", _update_plan_codegen),
    ("._inductor._aclgraph_update_plan.codegen", _update_plan_codegen),
):
    sys.modules[__name__ + _module_name] = _module
npu._npugraph_handlers = _graph_op_handlers_builtin
npu._aclgraph_update_plan = _update_plan
npu._npugraph_utils = _graph_trace_align
# torch_npu defines ExternalEvent in torch_npu.npu.streams, next to Event.
from npusim.compile.graph_updates.external_event import ExternalEvent as _ExternalEvent  # noqa: E402

npu.streams.ExternalEvent = _ExternalEvent
del _module_name, _module

# torch_npu's own operators (torch.ops.npu.*) as torch_npu.<name>, as torch_npu exports them.
from . import _custom_ops  # noqa: E402

__all__ += _custom_ops.export_npu_ops(globals())
