"""Super-kernel controls with npusim's CANN (9.1, no aclsk library): torch_npu's argument checks,
then torch_npu's "Failed to find function" error."""

import pytest
import torch

import npusim  # noqa: F401


def test_scope_names_are_checked_then_the_cann_function_is_missing():
    for bad in ("", "   "):
        with pytest.raises(RuntimeError, match="scope_name should be None or a non-empty string"):
            torch.npu.super_kernel_scope_begin(bad)
    with pytest.raises(RuntimeError, match="Failed to find function aclskScopeBegin"):
        torch.npu.super_kernel_scope_begin("scope")
    with pytest.raises(RuntimeError, match="Failed to find function aclskScopeEnd"):
        torch.npu.super_kernel_scope_end()


def test_super_kernel_optimize_needs_a_capture_and_cann_support():
    graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="Unable to cast"):
        graph.super_kernel_optimize(optimize_options="invalid", debug_options=None)
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        graph.super_kernel_optimize(optimize_options={"preload_code": 1}, debug_options=None)
    x = torch.ones(4, device="npu")
    with torch.npu.graph(graph):
        x.add_(1)
    with pytest.raises(RuntimeError, match="Failed to find function AclskOptimize"):
        graph.super_kernel_optimize(optimize_options=None, debug_options=None)
