"""ASCEND_RT_VISIBLE_DEVICES and PYTORCH_NPU_ALLOC_CONF are read when torch_npu reads them: the
device count before initialisation follows the environment at each call; the allocator settings
are read at the first allocation or changed by torch.npu.memory._set_allocator_settings."""

from __future__ import annotations

from npusim_testing.fresh_process import run_python

ROUNDUP = "roundup_power2_divisions:[8:1,64:4,128:8,256:2,>:16]"


def test_environment_set_after_counting_devices_is_used():
    # The example: torch_npu reserves 83886080 bytes, the frozen default 69206016.
    result = run_python(
        f"""
        import os, torch, npusim
        import torch.testing._internal.common_utils  # calls is_available() at import
        print(torch.npu.is_available(), torch.npu.device_count(), torch.accelerator.device_count(),
              npusim._C._runtime_started(), torch.npu.is_initialized())
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "2,3"
        os.environ["PYTORCH_NPU_ALLOC_CONF"] = "{ROUNDUP}"
        print(torch.npu.device_count(), torch.accelerator.device_count(), npusim._C._runtime_started())
        x = torch.empty(65 * 2**20, dtype=torch.uint8, device="npu")
        print(torch.npu.memory_reserved())
        torch.zeros(1, device="npu:1")
        print(torch.npu.get_device_properties(1).physical_id)
        # After initialisation the device list is frozen, as on torch_npu.
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0"
        print(torch.npu.device_count())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True 8 8 False False", "2 2 False", "83886080", "3", "2"]


def test_bad_alloc_conf_at_first_allocation_then_set_allocator_settings():
    result = run_python(
        f"""
        import os, torch, npusim
        print(torch.npu.device_count())
        os.environ["PYTORCH_NPU_ALLOC_CONF"] = "max_split_size_mb:5"
        try:
            torch.ones(2, device="npu")
        except RuntimeError as error:
            print("refused", "max_split_size_mb" in str(error))
        os.environ["PYTORCH_NPU_ALLOC_CONF"] = "max_split_size_mb:64"  # read again: the first failed
        print(int(torch.ones(2, device="npu").sum().item()), torch.npu.memory_stats()["max_split_size"])
        torch.npu.memory._set_allocator_settings("{ROUNDUP}")
        x = torch.empty(65 * 2**20, dtype=torch.uint8, device="npu")
        print(torch.npu.memory_reserved(), torch.npu.memory_stats()["max_split_size"])
        del x
        torch.npu.empty_cache()
        # Unnamed rounding keys restart from their defaults, as in torch_npu's parseArgs.
        torch.npu.memory._set_allocator_settings("max_split_size_mb:40")
        x = torch.empty(65 * 2**20, dtype=torch.uint8, device="npu")
        print(torch.npu.memory_reserved(), torch.npu.memory_stats()["max_split_size"])
        try:
            torch.npu.memory._set_allocator_settings("no_such_key:1")
        except RuntimeError as error:
            print("refused", "no_such_key" in str(error))
        print(int(torch.ones(4, device="npu").sum().item()))  # the allocator still works
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "8",
        "refused True",
        "2 67108864",
        "85983232 -1",  # 80 MiB rounded block + the 2 MiB small-pool segment of the ones above
        "69206016 41943040",  # after empty_cache: the 66 MiB block alone
        "refused True",
        "4",
    ]


def test_large_segment_size_rules():
    """large_segment_size_mb (PyTorch's key) is above 10 MB, takes priority over torch_npu's
    segment_size_mb in either order, and max_split_size_mb may not be below it."""
    result = run_python(
        """
        import os, torch, npusim
        def reserved_by_5mb(conf):
            os.environ["PYTORCH_NPU_ALLOC_CONF"] = conf
            try:
                torch.npu.memory._set_allocator_settings(conf)
            except RuntimeError as error:
                return "refused: " + str(error).splitlines()[0]
            x = torch.empty(5 * 2**20, dtype=torch.uint8, device="npu")
            reserved = torch.npu.memory_reserved() // 2**20
            del x
            torch.npu.empty_cache()
            return reserved
        torch.ones(1, device="npu")
        torch.npu.empty_cache()
        print(reserved_by_5mb("large_segment_size_mb:50"))
        print(reserved_by_5mb("segment_size_mb:50,large_segment_size_mb:100"))
        print(reserved_by_5mb("large_segment_size_mb:100,segment_size_mb:50"))
        print(reserved_by_5mb("large_segment_size_mb:5"))
        print(reserved_by_5mb("large_segment_size_mb:50,max_split_size_mb:30"))
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == ["50", "100", "100"], lines
    assert lines[3].startswith("refused: ") and "large_segment_size_mb must be > 10" in lines[3], lines[3]
    assert "max_split_size_mb too small, must be >= large_segment_size_mb (50)" in lines[4], lines[4]
