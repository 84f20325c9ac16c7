"""torch_npu's super-kernel controls (``torch.npu.super_kernel_scope_begin/end``,
``NPUGraph.super_kernel_optimize``) as they behave with npusim's CANN.

On the chip the super kernel (CANN's aclsk library: ``aclskScopeBegin``, ``aclskScopeEnd``,
``aclskOptimize``) fuses a captured graph's kernels into one. torch_npu resolves those functions
from CANN when first called; npusim simulates CANN 9.1, whose runtime has no super-kernel library
(torch_npu's own tests ask for CANN 9.9), so after the argument checks torch_npu makes, each call
fails as torch_npu fails there: ``Failed to find function ...`` (ERR00008 resource not found).
"""

from __future__ import annotations

from typing import Any

from npusim._error_code import ErrCode, pta_error

__all__ = ["super_kernel_scope_begin", "super_kernel_scope_end", "optimize"]


def _not_in_cann(function: str) -> RuntimeError:
    return RuntimeError(f"Failed to find function {function}" + pta_error(ErrCode.NOT_FOUND))


def _check_scope_name(scope_name: Any) -> None:
    if scope_name is not None and (not isinstance(scope_name, str) or not scope_name.strip()):
        raise RuntimeError("scope_name should be None or a non-empty string." + pta_error(ErrCode.PARAM))


def super_kernel_scope_begin(scope_name: str | None = None) -> None:
    r"""Open a super-kernel scope on the current stream (CANN's aclskScopeBegin)."""
    _check_scope_name(scope_name)
    raise _not_in_cann("aclskScopeBegin")


def super_kernel_scope_end(scope_name: str | None = None) -> None:
    r"""Close a super-kernel scope on the current stream (CANN's aclskScopeEnd)."""
    _check_scope_name(scope_name)
    raise _not_in_cann("aclskScopeEnd")


def _as_options(value: Any) -> dict | None:
    # torch_npu's binding casts each to a dict (pybind11 refuses anything else).
    if value is None or isinstance(value, dict):
        return value
    raise RuntimeError(f"Unable to cast Python instance of type {type(value)} to C++ type 'dict'")


def optimize(captured: bool, optimize_options: Any = None, debug_options: Any = None) -> None:
    """NPUGraph.super_kernel_optimize for a graph that has (``captured``) or has not been captured."""
    _as_options(optimize_options)
    _as_options(debug_options)
    if not captured:
        raise RuntimeError("Called NPUGraph::super_kernel_optimize without a preceding successful capture.")
    raise _not_in_cann("AclskOptimize")
