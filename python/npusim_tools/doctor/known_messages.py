"""What the error texts of the real stack mean: the messages of a wrong version or environment
(torch_npu contract §17) and the ACL, CANN and torch_npu error codes (§6.5-§6.7), each mapped
to its usual cause and fix."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KnownMessage", "KNOWN_MESSAGES", "match_messages", "explain_code", "ACL_CODES", "CANN_CODES"]


@dataclass(frozen=True)
class KnownMessage:
    key: str
    pattern: str  # a regular expression, searched case-sensitively
    cause: str
    fix: str


KNOWN_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "cann-not-sourced",
        r"lib(hccl|ascendcl|runtime|ge_runner|graph|opapi|acl_op_compiler)\.so: cannot open shared object file",
        "the CANN toolkit is not installed, or its environment is not sourced in this shell "
        "(LD_LIBRARY_PATH lacks <toolkit>/lib64)",
        "source /usr/local/Ascend/ascend-toolkit/set_env.sh (or your toolkit's set_env.sh) in the shell that starts Python",
    ),
    KnownMessage(
        "nnal-missing",
        r"libatb\.so: cannot open shared object file",
        "the NNAL/ATB package (Ascend Transformer Boost) is not installed or not sourced",
        "install the NNAL package matching your CANN release and source /usr/local/Ascend/nnal/atb/set_env.sh",
    ),
    KnownMessage(
        "opp-path-unset",
        r"ASCEND_OPP_PATH environment variable is not set",
        "the operator package (opp) path is unset: set_env.sh was not sourced, or the opp package is missing",
        "source the toolkit's set_env.sh; check that <toolkit>/opp exists",
    ),
    KnownMessage(
        "torch-abi-mismatch",
        r"libtorch_npu\.so: undefined symbol: _ZN5torch|torch_npu.*undefined symbol: _ZN(3c10|2at|5torch)",
        "torch_npu was built for another PyTorch version than the one installed",
        "install the torch version of your torch_npu wheel (see `npusim doctor` compatibility check), e.g. "
        "pip install torch==<its PyTorch version>",
    ),
    KnownMessage(
        "cann-release-mismatch",
        r"undefined symbol: (MsprofSysCycleTime|_ZN12ErrorManager19ATCReportErrMessage|_ZN3Mki2Dl)",
        "torch_npu, CANN and NNAL come from releases that do not match",
        "install the torch_npu wheel listed for your CANN release (compatibility table), or upgrade CANN/NNAL together",
    ),
    KnownMessage(
        "cuda-torch",
        r"Two accelerators cannot be used at the same time in PyTorch|Failed to load the backend extension: torch_npu",
        "a CUDA (or ROCm, XPU) build of torch is installed next to torch_npu",
        "pip install the CPU build of torch: pip install torch==<version> --index-url https://download.pytorch.org/whl/cpu",
    ),
    KnownMessage(
        "old-version-map",
        r"CANN package version .* and PyTorch version .* do not match",
        "an old CANN / torch_npu pair (6.3.RC2 or earlier) that does not match",
        "install the torch_npu release listed for your CANN version",
    ),
    KnownMessage(
        "no-device",
        r"error code is 207004|The device is unavailable|get device count of NPU failed|dcmi model initialized failed",
        "no NPU is usable: the driver is missing, the container lacks /dev/davinci* devices, "
        "another process holds the device (-8020), or ASCEND_RT_VISIBLE_DEVICES names devices that do not exist",
        "check `npu-smi info` on the host; run the container with --device=/dev/davinciN --device=/dev/davinci_manager "
        "--device=/dev/devmm_svm --device=/dev/hisi_hdc and the driver mounted; fix ASCEND_RT_VISIBLE_DEVICES",
    ),
    KnownMessage(
        "invalid-device",
        r"error code is 107001|Invalid device ID|invalid device, set drv device",
        "the program selects a device id outside the visible range",
        "use an id below torch.npu.device_count(); check ASCEND_RT_VISIBLE_DEVICES and LOCAL_RANK",
    ),
    KnownMessage(
        "soc-init",
        r"GEInitialize failed|init runtime platform info failed|EH9999",
        "the graph engine / compiler could not initialise for this SoC: CANN does not support the chip, "
        "or the toolkit is incomplete",
        "install a CANN release that supports your chip (and its kernels package); re-source set_env.sh",
    ),
    KnownMessage(
        "kernels-missing",
        r"Cannot find bin of op",
        "the operator kernel package for this chip is not installed",
        "install the CANN kernels package (Ascend-cann-kernels-<chip>) of the same release as the toolkit",
    ),
    KnownMessage(
        "wrong-python-wheel",
        r"torch_npu.*\.whl is not a supported wheel on this platform",
        "the torch_npu wheel was built for another Python version or architecture",
        "download the wheel whose cpXY tag matches your Python and whose platform matches the machine",
    ),
)


def match_messages(text: str) -> list[KnownMessage]:
    """The known messages found in ``text`` (an error message, a traceback, a log line)."""
    return [message for message in KNOWN_MESSAGES if re.search(message.pattern, text)]


# ACL return codes (contract §6.6): text, usual cause.
ACL_CODES: dict[str, tuple[str, str]] = {
    "107001": ("Invalid device ID.", "a device id outside the visible range (ASCEND_RT_VISIBLE_DEVICES, set_device)"),
    "107020": ("task timeout", "a device task did not finish in time (rtDeviceSynchronize); often a hung collective"),
    "161002": ("aclnn parameter error", "an operator got arguments it does not support (dtype, shape, format)"),
    "207001": ("Failed to apply for memory.", "device memory allocation failed"),
    "207004": ("The device is unavailable.", "no usable device: driver, container devices or ASCEND_RT_VISIBLE_DEVICES"),
    "207018": ("The memory on the device is exhausted.", "out of device memory"),
    "500001": ("The internal ACL of the system is incorrect.", "internal error; often compiler/GE initialisation (SoC not supported)"),
    "507018": ("The aicpu execution is abnormal.", "an AI CPU kernel failed; the CANN message after it names the operator"),
    "507046": ("stream synchronisation timeout", "a stream did not finish in time; look for the operator or collective that hung"),
    "507048": ("The execution of the internal task times out.", "a device task timed out; often HCCL waiting on a peer"),
    "507899": ("An internal error occurs in the Driver module.", "the driver failed: device not usable, driver/firmware mismatch"),
    "561103": ("aclnn inner error", "an aclnn operator failed inside CANN; the EZ9999 message after it says why"),
}

# CANN error codes (contract §6.7), from aclGetRecentErrMsg.
CANN_CODES: dict[str, str] = {
    "EE1001": "runtime argument error (e.g. an invalid device id)",
    "EE1002": "stream synchronisation timeout",
    "EZ9999": "operator inner error (aclnn or kernel; 'Cannot find bin of op' means the kernels package is missing)",
    "EZ1001": "aclnn parameter error",
    "EH9999": "compiler / graph engine initialisation failed",
    "EI0002": "HCCL notify wait timeout: a peer rank did not reach the collective (crashed, slower, or different order)",
    "EI0006": "HCCL socket timeout: ranks could not connect (network, HCCL_IF_IP / HCCL_SOCKET_IFNAME, firewall)",
}

# torch_npu's ERR<mm><ccc> suffix (contract §6.5).
_ERR_MODULES = {"00": "PTA", "01": "OPS", "02": "DIST", "03": "GRAPH", "04": "PROF", "99": "UNKNOWN"}
_ERR_CATEGORIES = {
    "001": "invalid parameter", "002": "invalid type", "003": "invalid value", "004": "invalid pointer",
    "005": "internal error", "006": "memory error", "007": "feature not supported", "008": "resource not found",
    "009": "resource unavailable", "010": "system call failed", "011": "timeout error", "012": "permission error",
    "100": "call acl api failed", "200": "call hccl api failed", "300": "call ge api failed", "999": "application exception",
}


def explain_code(code: str) -> str | None:
    """A one-line explanation of an ACL, CANN or torch_npu error code, or None."""
    if code in ACL_CODES:
        text, cause = ACL_CODES[code]
        return f"ACL error {code} \"{text}\": {cause}"
    if code in CANN_CODES:
        return f"CANN error {code}: {CANN_CODES[code]}"
    match = re.fullmatch(r"ERR(\d\d)(\d{3})", code)
    if match and match.group(1) in _ERR_MODULES and match.group(2) in _ERR_CATEGORIES:
        return f"torch_npu {code}: {_ERR_MODULES[match.group(1)]} {_ERR_CATEGORIES[match.group(2)]}"
    return None
