"""CANN and SoC versions as torch_npu reports them (``torch.version.cann``,
``torch_npu.npu.utils.get_cann_version``, ``_is_gte_cann_version``, ``get_soc_version``).

npusim simulates the CANN release that the torch_npu line of its placement data runs on
(torch_npu for PyTorch 2.13 with CANN 9.1.0, contract §16.2). Every CANN component reports
that version; ``DRIVER`` reports the driver version npusim's simulated devices carry.
"""

from __future__ import annotations

import os
import re

from npusim._error_code import ErrCode, pta_error
from npusim_tools import simulated_stack

__all__ = ["CANN_VERSION", "get_cann_version", "get_soc_version", "installed_cann_version"]

# The simulated stack's versions, from the one file that npu-smi, the doctor and collect-env
# also read (npusim/data/simulated_stack.ini).
_STACK = simulated_stack()
CANN_VERSION = _STACK["cann_version"]
# The driver version of npusim's simulated devices (the one its npu-smi look-alike shows).
DRIVER_VERSION = _STACK["driver_version"]

_COMPONENTS = ("CANN", "RUNTIME", "COMPILER", "HCCL", "TOOLKIT", "OPP", "OPP_KERNEL", "DRIVER")

# SoC enum of torch_npu (core/npu/NpuVariables.h, contract §16.2).
_SOC_VERSIONS = {
    "Ascend910PremiumA": 100,
    "Ascend910ProA": 101,
    "Ascend910A": 102,
    "Ascend910ProB": 103,
    "Ascend910B": 104,
    "Ascend310P1": 200,
    "Ascend910B1": 220,
    "Ascend910B2": 221,
    "Ascend910B2C": 222,
    "Ascend910B3": 223,
    "Ascend910B4": 224,
    "Ascend910B4_1": 225,
    "Ascend310B1": 240,
    "Ascend910_9391": 250,
    "Ascend910_9392": 251,
    "Ascend910_9381": 252,
    "Ascend910_9382": 253,
    "Ascend910_9372": 254,
    "Ascend910_9362": 255,
    "Ascend910_9363": 256,
    "Ascend950": 260,
}


def installed_cann_version() -> str:
    """The CANN version torch_npu puts in ``torch.version.cann``: the ``version=`` line of the first
    ``ascend_*_install.info`` under ``$ASCEND_HOME_PATH``, ``"not known"`` if there is none; without
    that variable, the CANN version npusim simulates."""
    if not os.environ.get("ASCEND_HOME_PATH"):
        # What collect_env answers without the variable (the same simulated_stack.ini), without
        # importing that report module: this runs at `import torch`.
        return CANN_VERSION
    from npusim_tools.collect_env import get_cann_version as installed

    return installed()


def get_cann_version(module: str = "CANN") -> str:
    r"""The version of a CANN component: one of ``CANN``, ``RUNTIME``, ``COMPILER``, ``HCCL``,
    ``TOOLKIT``, ``OPP``, ``OPP_KERNEL``, ``DRIVER``."""
    if module not in _COMPONENTS:
        raise ValueError(
            f"module of get_cann_version should be in {list(_COMPONENTS)}, but got {module}" + pta_error(ErrCode.PARAM)
        )
    return DRIVER_VERSION if module == "DRIVER" else CANN_VERSION


def _version_key(text: str) -> tuple:
    """A sortable key of a CANN version: ``8.0.RC1`` < ``8.0.RC2`` < ``8.0.0`` < ``8.0.1``;
    suffixes such as ``.alpha003`` or ``.beta1`` come before the version they precede."""
    key: list[tuple[int, int]] = []
    for part in str(text).strip().split("."):
        match = re.fullmatch(r"(\d+)", part)
        if match:
            key.append((2, int(match.group(1))))
            continue
        match = re.fullmatch(r"(?i)rc(\d+)", part)
        if match:
            key.append((1, int(match.group(1))))
            continue
        match = re.fullmatch(r"(?i)(alpha|beta)(\d*)", part)
        if match:
            key.append((-2 if match.group(1).lower() == "alpha" else -1, int(match.group(2) or 0)))
            continue
        raise ValueError(f"invalid CANN version: {text}" + pta_error(ErrCode.VALUE))
    return tuple(key)


def _is_gte_cann_version(version: str, module: str = "CANN") -> bool:
    r"""Whether the installed version of ``module`` is at least ``version``."""
    return _version_key(get_cann_version(module)) >= _version_key(version)


def get_soc_version() -> int:
    r"""The SoC of the current device as torch_npu's SocVersion number (910B2 = 221)."""
    from npusim.npu import devices

    name = devices.get_device_name()
    if name not in _SOC_VERSIONS:
        raise RuntimeError(f"unknown SoC {name}" + pta_error(ErrCode.INTERNAL))
    return _SOC_VERSIONS[name]
