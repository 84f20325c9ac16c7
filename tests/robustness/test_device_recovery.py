"""torch_npu's recovery from device faults (torch_npu.npu._recovery, stop_device/restart_device).

Marks live in the caching allocator's blocks; the unsafe-data check runs in every operator and
copy while it is on; a stopped device refuses every task with "FORCE STOP." until restarted.
"""

from __future__ import annotations

import pytest
import torch

import torch_npu  # noqa: F401  (served by npusim)
from torch_npu.npu import _recovery


@pytest.fixture(autouse=True)
def clean_recovery_state():
    _recovery.set_npu_tensor_unsafe_check_flag(False)
    yield
    _recovery.set_npu_tensor_unsafe_check_flag(False)
    torch.npu.restart_device(0)


def test_marks_follow_allocations_and_copies():
    a = torch.randn(64, device="npu")
    b = torch.randn(64, device="npu")
    assert _recovery.check_npu_tensor_is_safe(a) and _recovery.check_npu_storage_is_safe(b.untyped_storage())
    _recovery.mark_all_npu_tensor_unsafe(0)
    assert not _recovery.check_npu_tensor_is_safe(a)
    assert not _recovery.check_npu_tensor_is_safe(b[3:])  # a view shares its base's allocation
    # A new allocation holds fresh data, even in a block that was marked before.
    del a
    fresh = torch.ones(64, device="npu")
    assert _recovery.check_npu_tensor_is_safe(fresh)
    # With the check on, a copy needs a safe source and makes its destination safe.
    _recovery.set_npu_tensor_unsafe_check_flag(True)
    b.copy_(fresh)
    assert _recovery.check_npu_tensor_is_safe(b)
    # CPU tensors and host storages are never marked.
    assert _recovery.check_npu_tensor_is_safe(torch.ones(3))


def test_unsafe_inputs_are_refused_only_while_the_check_is_on():
    a = torch.randn(8, device="npu")
    b = torch.randn(8, device="npu")
    _recovery.mark_all_npu_tensor_unsafe(0)
    torch.add(a, b)  # the check is off: the operator runs
    _recovery.set_npu_tensor_unsafe_check_flag(True)
    assert _recovery.get_npu_tensor_unsafe_check_flag()
    with pytest.raises(RuntimeError, match="There is unsafe data in the input tensor."):
        a + b
    with pytest.raises(RuntimeError, match="There is unsafe data in the input tensor."):
        a.cpu()  # a copy from unsafe memory
    with pytest.raises(RuntimeError, match="There is unsafe data in the input tensor."):
        torch.add(torch.zeros(8, device="npu"), 1, out=a)  # out= arguments are checked too
    _recovery.update_npu_tensor_to_safe(a)
    _recovery.update_npu_tensor_to_safe(b)
    assert torch.equal((a + b).cpu(), a.cpu() + b.cpu())


def test_type_errors_name_the_wrong_argument():
    with pytest.raises(RuntimeError, match="param type should be Tensor, could not be <class 'str'>"):
        _recovery.check_npu_tensor_is_safe("x")
    with pytest.raises(RuntimeError, match="param type should be TypedStorage or UntypedStorage"):
        _recovery.check_npu_storage_is_safe(torch.ones(1))


def test_stopped_device_refuses_tasks_until_restart():
    x = torch.ones(4, device="npu")
    assert torch.npu.stop_device(0) == 0
    with pytest.raises(RuntimeError, match=r"FORCE STOP\."):
        x + 1
    with pytest.raises(RuntimeError, match=r"FORCE STOP\."):
        torch.ones(4).to("npu")
    torch.npu.restart_device(0)
    assert torch.equal((x + 1).cpu(), torch.full((4,), 2.0))
    assert torch.npu.check_uce_in_memory(0) == 0  # the simulated HBM never has a memory fault
    assert torch.npu._get_uce_addr() == []


def test_restart_with_rebuild_marks_everything_unsafe_unless_told_not_to():
    x = torch.ones(4, device="npu")
    torch.npu.restart_device(0, rebuild_all_resources=True, disable_tensor_unsafe_check=True)
    assert _recovery.check_npu_tensor_is_safe(x) and not _recovery.get_npu_tensor_unsafe_check_flag()
    torch.npu.restart_device(0, rebuild_all_resources=True)
    assert not _recovery.check_npu_tensor_is_safe(x) and _recovery.get_npu_tensor_unsafe_check_flag()
    with pytest.raises(RuntimeError, match="There is unsafe data in the input tensor."):
        x * 2


def test_torch_npu_C_bindings_and_error_code_module():
    from torch_npu.utils._error_code import ErrCode, _except_handler, pta_error

    x = torch.ones(2, device="npu")
    assert torch_npu._C._check_npu_data_ptr(x.untyped_storage())
    torch_npu._C._mark_all_npu_data_ptr_unsafe(0)
    assert not torch_npu._C._check_npu_data_ptr(x.untyped_storage())
    torch_npu._C._update_npu_data_ptr(x.untyped_storage())
    assert torch_npu._C._check_npu_data_ptr(x.untyped_storage())
    assert "ERR00100 PTA call acl api failed" in pta_error(ErrCode.ACL) or pta_error(ErrCode.ACL) == ""
    torch.npu.stop_device(0)
    assert _except_handler.force_stop_flag
    torch.npu.restart_device(0)
    assert not _except_handler.force_stop_flag


def test_stopped_device_refuses_collectives_and_restart_reaches_the_process_groups():
    from npusim_testing.fresh_process import free_port, run_python

    result = run_python(
        """
        import torch, torch.distributed as dist, npusim
        dist.init_process_group("hccl", rank=0, world_size=1)
        t = torch.ones(2, device="npu")
        torch.npu.stop_device(0)
        try:
            dist.all_reduce(t)
        except RuntimeError as error:
            print("refused:", str(error).splitlines()[0])
        torch.npu.restart_device(0)  # sets the HCCL backends' watchdog back to run
        dist.all_reduce(t)
        print(t.cpu().tolist())
        dist.destroy_process_group()
        """,
        {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["refused: FORCE STOP.", "[1.0, 1.0]"], result.stdout
