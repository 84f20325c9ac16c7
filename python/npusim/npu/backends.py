"""``torch_npu.npu.backends``: the scaled-dot-product-attention switches under their older
module name (torch_npu keeps this module for compatibility; the functions live in
:mod:`npusim.npu.options`), and the FFT plan cache (``torch.npu.backends.fft_plan_cache``)."""

from npusim.npu._fft_plan_cache import NPUFFTPlanCache

from npusim.npu.options import (  # noqa: F401
    enable_flash_sdp,
    enable_math_sdp,
    enable_mem_efficient_sdp,
    flash_sdp_enabled,
    math_sdp_enabled,
    mem_efficient_sdp_enabled,
    preferred_linalg_library,
    sdp_kernel,
)

__all__: list[str] = []

fft_plan_cache = NPUFFTPlanCache()
