"""Validation of the environment variables torch_npu and npusim read (contract §5), with the
texts torch_npu itself raises where it has one."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Mapping

from npusim_tools.doctor.report import FAIL, PASS, WARN, Check

__all__ = ["check_environment", "parse_visible_devices", "ALLOC_CONF_KEYS"]

SECTION = "npusim chain"


def parse_visible_devices(value: str | None, physical_count: int) -> list[int]:
    """torch_npu's ``_parse_visible_devices`` (contract §5.3): comma-separated integers, parsing
    stops at the first element that does not start with a digit, a list that is not strictly
    ascending gives no device, an entry at or above the physical count ends the list."""
    if value is None:
        return list(range(physical_count))
    devices: list[int] = []
    for element in value.split(","):
        match = re.match(r"\s*(\d+)", element)
        if not match:
            break
        devices.append(int(match.group(1)))
    if any(b <= a for a, b in zip(devices, devices[1:])):
        return []
    result = []
    for device in devices:
        if device >= physical_count:
            break
        result.append(device)
    return result


ALLOC_CONF_KEYS = {
    "max_split_size_mb", "garbage_collection_threshold", "expandable_segments", "base_addr_aligned_kb", "page_size",
    "segment_size_mb", "large_segment_size_mb", "roundup_power2_divisions", "max_non_split_rounding_mb",
    "per_process_memory_fraction", "multi_stream_lazy_reclaim", "throw_on_npumalloc_oom", "release_lock_on_npumalloc",
    "pinned_use_background_threads", "pin_memory_expandable_segments", "pinned_mem_register",
    "pinned_max_round_threshold_mb", "pinned_max_cached_size_mb",
}

Validator = Callable[[str], "str | None"]  # returns an error text or None


def _choices(*allowed: str, message: str | None = None) -> Validator:
    def validate(value: str) -> str | None:
        if value in allowed:
            return None
        if message:
            return message
        return f"should be {', '.join(allowed[:-1])} or {allowed[-1]}"

    return validate


def _integer(low: int, high: int) -> Validator:
    def validate(value: str) -> str | None:
        if re.fullmatch(r"\d+", value.strip()) and low <= int(value) <= high:
            return None
        return f"should be an integer from {low} to {high}"

    return validate


def _byte_size(value: str) -> str | None:
    if re.fullmatch(r"\d+(\.\d+)?(B|K|KB|KiB|M|MB|MiB|G|GB|GiB|T|TB|TiB)?", value) and float(re.match(r"[\d.]+", value).group()) > 0:
        return None
    return "expected a positive size in bytes, optionally with a K, M, G or T suffix"


def _alloc_conf(value: str) -> str | None:
    problems = []
    keys = set()
    for item in filter(None, (part.strip() for part in value.split(","))):
        if ":" not in item:
            problems.append(f"'{item}' is not key:value")
            continue
        key, setting = (part.strip() for part in item.split(":", 1))
        keys.add(key)
        if key not in ALLOC_CONF_KEYS:
            problems.append(f"unknown key '{key}'")
        elif key == "max_split_size_mb" and not (setting.isdigit() and int(setting) > 20):
            problems.append("max_split_size_mb must be an integer above 20")
        elif key == "garbage_collection_threshold":
            try:
                if not 0.0 < float(setting) < 1.0:
                    raise ValueError
            except ValueError:
                problems.append("garbage_collection_threshold must be between 0.0 and 1.0")
        elif key == "expandable_segments" and setting not in ("True", "False"):
            problems.append("expandable_segments must be True or False")
    if "expandable_segments" in keys and keys & {"max_split_size_mb", "garbage_collection_threshold"}:
        if re.search(r"expandable_segments\s*:\s*True", value):
            problems.append("expandable_segments:True cannot be combined with max_split_size_mb or garbage_collection_threshold")
    return "; ".join(problems) or None


def _known_chips(data_dir: Path) -> list[str]:
    names = []
    for path in sorted((data_dir / "chips").glob("*.ini")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.split("#", 1)[0]
            if line.strip().startswith(("soc_name", "npu_smi_name")) and "=" in line:
                names.append(line.split("=", 1)[1].strip())
    return names


def _placement_lines(data_dir: Path) -> list[str]:
    return sorted(p.stem.split("-", 1)[1] for p in (data_dir / "placement").glob("torch_npu-*.tsv"))


def check_environment(env: Mapping[str, str], data_dir: Path) -> list[Check]:
    """One check per set variable that has a rule, plus the cross-variable rules."""
    flag = _choices("0", "1")
    rules: dict[str, tuple[Validator, str]] = {
        "ASCEND_LAUNCH_BLOCKING": (flag, "0 (default, asynchronous) or 1 (synchronous, for debugging)"),
        "TASK_QUEUE_ENABLE": (_choices("0", "1", "2", message="TASK_QUEUE_ENABLE should be 0, 1 or 2"), "unset it or use 0, 1 or 2"),
        "PER_STREAM_QUEUE": (flag, "0 or 1"),
        "TORCH_NPU_FALLBACK_CPU_DISABLE": (flag, "0 or 1"),
        "ASCEND_GLOBAL_LOG_LEVEL": (
            _choices("0", "1", "2", "3", "4", message="ASCEND_GLOBAL_LOG_LEVEL should be 0, 1, 2, 3 or 4."),
            "use 0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR (default) or 4 NULL",
        ),
        "ASCEND_GLOBAL_EVENT_ENABLE": (flag, "0 or 1"),
        "ASCEND_SLOG_PRINT_TO_STDOUT": (flag, "0 (log files) or 1 (screen)"),
        "STREAMS_PER_DEVICE": (_choices("8", "32", message="should be 8 or 32; other values are ignored (32 is used)"), "8 or 32"),
        "TORCH_TRANSFER_TO_NPU": (_choices("0", "1", message="other values than 0 and 1 raise ValueError at import"), "0 or 1"),
        "TORCH_NPU_WARNING_DISABLE": (flag, "0 or 1"),
        "TORCH_NPU_COMPACT_ERROR_OUTPUT": (flag, "0 or 1"),
        "INF_NAN_MODE_ENABLE": (flag, "0 or 1"),
        "INF_NAN_MODE_FORCE_DISABLE": (flag, "0 or 1"),
        "ACL_OP_COMPILER_CACHE_MODE": (_choices("enable", "disable", "force"), "enable, disable or force"),
        "ACL_DEVICE_SYNC_TIMEOUT": (_integer(1, 2147483), "seconds, 1-2147483"),
        "HCCL_CONNECT_TIMEOUT": (_integer(0, 2**31 - 1), "seconds"),
        "HCCL_EXEC_TIMEOUT": (_integer(0, 2**31 - 1), "seconds, 0 = never"),
        "HCCL_EVENT_TIMEOUT": (_integer(0, 2**31 - 1), "seconds, 0 = never"),
        "HCCL_BUFFSIZE": (_integer(1, 2**31 - 1), "megabytes"),
        "HCCL_IF_BASE_PORT": (_integer(1, 65535 - 15), "a port that leaves 16 ports below 65536"),
        "PYTORCH_NPU_ALLOC_CONF": (_alloc_conf, "comma-separated key:value pairs of the caching allocator (contract §8.2)"),
        "PYTORCH_ALLOC_CONF": (_alloc_conf, "comma-separated key:value pairs"),
        "NPUSIM_DEVICE_COUNT": (_integer(1, 64), "1-64 simulated devices (default 8)"),
        "NPUSIM_HBM_SIZE": (_byte_size, "a size such as 64G"),
        "NPUSIM_SMI_SAMPLE_MS": (_integer(0, 10000), "0-10000 ms"),
    }
    chips = _known_chips(data_dir)
    if chips:
        rules["NPUSIM_SOC"] = (
            lambda v: None if v in chips else f"unknown chip; known: {', '.join(sorted(set(chips)))}",
            "one of the chips in npusim/data/chips",
        )
    lines = _placement_lines(data_dir)
    if lines:
        rules["NPUSIM_TORCH_NPU_VERSION"] = (
            lambda v: None if v in lines or ".".join(v.split(".")[:2]) in lines else f"no placement table; available: {', '.join(lines)}",
            "a torch_npu release line with a placement table",
        )

    checks = []
    bad = []
    good = []
    for name, (validate, accepted) in rules.items():
        value = env.get(name)
        if value is None or value == "":
            continue
        error = validate(value)
        if error:
            bad.append(Check(SECTION, f"variable {name}", FAIL, f"{name}={value!r}: {error}", f"set {name} to {accepted}, or unset it"))
        else:
            good.append(f"{name}={value}")
    checks.extend(bad)

    if env.get("PYTORCH_NPU_ALLOC_CONF") and env.get("PYTORCH_ALLOC_CONF"):
        checks.append(Check(SECTION, "variable PYTORCH_ALLOC_CONF", FAIL,
                            "PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF are both set: torch_npu refuses that",
                            "keep only PYTORCH_NPU_ALLOC_CONF"))
    exec_timeout, event_timeout = env.get("HCCL_EXEC_TIMEOUT", ""), env.get("HCCL_EVENT_TIMEOUT", "")
    if exec_timeout.isdigit() and event_timeout.isdigit() and int(event_timeout) != 0 and int(event_timeout) <= int(exec_timeout):
        checks.append(Check(SECTION, "variable HCCL_EVENT_TIMEOUT", WARN,
                            f"HCCL_EVENT_TIMEOUT={event_timeout} does not exceed HCCL_EXEC_TIMEOUT={exec_timeout}",
                            "make HCCL_EVENT_TIMEOUT larger than HCCL_EXEC_TIMEOUT (or 0 = never)"))
    if env.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0":
        checks.append(Check(SECTION, "variable TORCH_DEVICE_BACKEND_AUTOLOAD", WARN,
                            "TORCH_DEVICE_BACKEND_AUTOLOAD=0: `import torch` loads neither npusim nor torch_npu",
                            "import torch_npu (or npusim) explicitly, or unset TORCH_DEVICE_BACKEND_AUTOLOAD"))
    if env.get("TORCH_NPU_DISABLED_WARNING"):
        checks.append(Check(SECTION, "variable TORCH_NPU_DISABLED_WARNING", WARN,
                            "TORCH_NPU_DISABLED_WARNING is deprecated", "use TORCH_NPU_WARNING_DISABLE=1"))
    for name in ("ASCEND_PROCESS_LOG_PATH", "ASCEND_WORK_PATH"):
        value = env.get(name)
        if value and os.path.exists(value) and not os.path.isdir(value):
            checks.append(Check(SECTION, f"variable {name}", FAIL, f"{name}={value} is not a directory: no plog can be written",
                                f"point {name} at a directory"))
    if not bad:
        checks.append(Check(SECTION, "environment variables", PASS,
                            f"{len(good)} torch_npu/npusim variables set, all valid" if good else "none of the torch_npu/npusim variables is set (defaults)",
                            details=good))
    return checks
