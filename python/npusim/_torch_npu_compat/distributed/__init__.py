"""``torch_npu.distributed``: the hccl backend's public names, as torch_npu exports them."""

from npusim.distributed import is_hccl_available as _is_hccl_available

from .._public_names import expose as _expose

is_hccl_available = _expose(_is_hccl_available, __name__)

__all__ = ["is_hccl_available", "ProcessGroupHCCL"]


def __getattr__(name: str):
    if name == "ProcessGroupHCCL":
        from npusim.distributed import ProcessGroupHCCL

        return ProcessGroupHCCL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
