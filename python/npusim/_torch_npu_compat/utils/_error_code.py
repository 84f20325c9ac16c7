"""``torch_npu.utils._error_code``: the error-code suffixes of torch_npu's messages and its
exception handler (``_except_handler``, whose force-stop flag ``stop_device`` and
``restart_device`` set), served from npusim's own (``npusim._error_code``)."""

from npusim._error_code import (  # noqa: F401
    ErrCode,
    SubModule as _SubModuleID,
    _except_handler,
    dist_error,
    graph_error,
    ops_error,
    prof_error,
    pta_error,
)
