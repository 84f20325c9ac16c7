"""What torch_npu checks of the AscendCL start-up configuration when the runtime initializes.

- ``TORCH_ACL_INIT_CONFIG_PATH`` names the JSON file torch_npu hands to ``aclInit`` instead of
  its own ``acl.json``. The file must exist and parse as JSON, or start-up fails with torch_npu's
  error. In lazy set_device mode (CANN 8.3.RC1 and later, which npusim simulates) it must carry
  ``"defaultDevice": {"default_device": "0"}``; before that it must not carry ``defaultDevice``.
- ``ACL_OP_INIT_MODE`` (0, 1 or 2: how the aclop operator library is loaded) is read once; any
  other value warns and the chip's default is used (1 on 910B/910C/310P with CANN 8.3.RC1 or
  later, 0 on older chips, 2 on chips without aclop). npusim runs every operator on the aclnn
  path, so the mode changes nothing else.
"""

from __future__ import annotations

import json
import os
import warnings

from npusim._error_code import ErrCode, pta_error

__all__ = ["check_acl_init_config", "acl_op_init_mode"]

_ACLOP_ONLY_MODES = (0, 1, 2)
_acl_op_init_mode: int | None = None


def _lazy_set_device_mode() -> bool:
    from npusim.npu.versions import _is_gte_cann_version

    return bool(_is_gte_cann_version("8.3.RC1", "CANN"))


def check_acl_init_config() -> str | None:
    """Checks the file of ``TORCH_ACL_INIT_CONFIG_PATH`` as torch_npu does before ``aclInit``;
    returns its real path (None when the variable is unset). Raises ``RuntimeError``."""
    configured = os.environ.get("TORCH_ACL_INIT_CONFIG_PATH")
    if configured is None:
        return None
    path = os.path.realpath(configured) if configured and os.path.exists(configured) else ""
    if not path:
        raise RuntimeError(
            f"TORCH_ACL_INIT_CONFIG_PATH {configured} is invalid. Please set the environment variable "
            "'TORCH_ACL_INIT_CONFIG_PATH' to a valid JSON config file path." + pta_error(ErrCode.UNAVAIL)
        )
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        raise RuntimeError(
            f"Failed to open user acl json {path}. Please ensure the file exists and has read permission."
            + pta_error(ErrCode.UNAVAIL)
        ) from None
    try:
        config = json.loads(text)
    except ValueError as error:
        raise RuntimeError(
            f"Failed to parse user acl json {path}. Please check that the file contains valid JSON syntax. "
            f"Error: {error}" + pta_error(ErrCode.UNAVAIL)
        ) from None
    has_default_device = isinstance(config, dict) and "defaultDevice" in config
    if _lazy_set_device_mode():
        default_device = config.get("defaultDevice") if isinstance(config, dict) else None
        if not isinstance(default_device, dict):
            raise RuntimeError(
                f"User acl json {path} lacks 'defaultDevice' object, required for lazy set_device mode. "
                'Please add: "defaultDevice": {"default_device": "0"}' + pta_error(ErrCode.VALUE)
            )
        if default_device.get("default_device") != "0":
            raise RuntimeError(
                f"User acl json {path} requires 'defaultDevice.default_device' to be \"0\" in lazy set_device "
                'mode. Please set: "defaultDevice": {"default_device": "0"}' + pta_error(ErrCode.VALUE)
            )
    elif has_default_device:
        raise RuntimeError(
            f"User acl json {path} contains 'defaultDevice' which is not expected in non-lazy set_device mode. "
            "Please remove the 'defaultDevice' field from your JSON config." + pta_error(ErrCode.VALUE)
        )
    return path


def _default_mode(soc_version: int) -> int:
    if soc_version >= 260:  # Ascend950: aclnn only
        return 2
    # 310P (200-239) and 910B, 910C (Ascend910_93xx, 250+) load aclop lazily from CANN 8.3.RC1 on.
    mode_1_soc = 200 <= soc_version < 240 or soc_version >= 250
    return 1 if mode_1_soc and _lazy_set_device_mode() else 0


def acl_op_init_mode() -> int:
    """``ACL_OP_INIT_MODE`` as torch_npu reads it (once, at start-up, for the current chip)."""
    global _acl_op_init_mode
    if _acl_op_init_mode is not None:
        return _acl_op_init_mode
    from npusim.npu.versions import get_soc_version

    soc_version = get_soc_version()
    default = _default_mode(soc_version)
    mode = default
    configured = os.environ.get("ACL_OP_INIT_MODE")
    if configured is not None:
        try:
            requested = int(configured.strip() or "0")
        except ValueError:
            requested = 0  # strtol: no digits read as 0
        if default == 2 and requested != 2:
            warnings.warn(
                f"This device only supports ACL_OP_INIT_MODE=2 (aclops disabled), but got {requested}, "
                "automatically switched to 2."
            )
        elif requested not in _ACLOP_ONLY_MODES:
            warnings.warn(f"Get env ACL_OP_INIT_MODE not in [0, 1, 2], so reset it to the default value {default}.")
        else:
            mode = requested
    _acl_op_init_mode = mode
    return mode
