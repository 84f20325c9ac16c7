"""``torch_npu.npu.graphs``: torch_npu's graph module, served by npusim.compile.

The graph API (``NPUGraph``, ``graph``, ``graph_pool_handle``, ``make_graphed_callables``,
``is_current_stream_capturing``), the host functions of a stream and the NPUGraph debugging
operators (``print_npugraph_tensor``, ``save_npugraph_tensor``) with the helpers torch_npu keeps
in this module for them.
"""

from npusim.compile import graph_debug_ops as _graph_debug_ops
from npusim.compile import host_functions as _host_functions
from npusim.compile.super_kernel import super_kernel_scope_begin, super_kernel_scope_end  # noqa: F401
from npusim.compile.graph_updates.task_groups import (  # noqa: F401
    graph_task_group_begin,
    graph_task_group_end,
    graph_task_update_begin,
    graph_task_update_end,
)
from npusim.compile.graphs import (  # noqa: F401
    NPUGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)

__all__ = ["NPUGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing",
           "graph_task_group_begin", "graph_task_group_end", "graph_task_update_begin", "graph_task_update_end",
           "super_kernel_scope_begin", "super_kernel_scope_end"]

# torch_npu's private helpers of the debugging operators (names as in torch_npu/npu/graphs.py).
_NPUGRAPH_TENSOR_PTR_SPEC_MARKER = _host_functions.TENSOR_PTR_SPEC_MARKER
_NPUGRAPH_TENSOR_BUFFER_SPEC_MARKER = _host_functions.TENSOR_BUFFER_SPEC_MARKER
_make_npugraph_tensor_ptr_spec = _host_functions.tensor_ptr_spec
_materialize_npugraph_tensor_arg = _host_functions.materialize_tensor_arg
_build_save_npugraph_tensor_path = _graph_debug_ops.save_path_for
