"""The torch_npu compatibility table (``npusim/data/compatibility.tsv``, contract §16.2)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from npusim_tools import npusim_data_dir

__all__ = ["Release", "load_table", "releases_for_torch_npu", "releases_for_pytorch", "python_in_range", "base_version"]


@dataclass(frozen=True)
class Release:
    torch_npu: str
    pytorch: str
    torchnpu: str
    cann: str
    python_min: str
    python_max: str
    status: str  # active | eol | prerelease


def load_table(path: Path | None = None) -> list[Release]:
    path = path or npusim_data_dir() / "compatibility.tsv"
    releases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise ValueError(f"{path}: malformed line {line!r}")
        releases.append(Release(*fields))
    return releases


def base_version(version: str) -> str:
    """``2.5.1`` of ``2.5.1.post1``, ``2.13.0rc1``, ``2.5.1.dev20250218`` or ``2.13.0+cpu``."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version.strip())
    if not match:
        return version.strip()
    return ".".join(part or "0" for part in match.groups())


def _line(version: str) -> str:
    return ".".join(base_version(version).split(".")[:2])


def releases_for_torch_npu(version: str, table: list[Release]) -> list[Release]:
    """Rows for an installed torch_npu version: the exact wheel if listed, else its PyTorch line."""
    clean = version.split("+")[0]
    exact = [r for r in table if r.torch_npu == clean]
    if exact:
        return exact
    base = base_version(clean)
    same_base = [r for r in table if r.pytorch == base]
    return same_base or [r for r in table if _line(r.pytorch) == _line(base)]


def releases_for_pytorch(version: str, table: list[Release]) -> list[Release]:
    base = base_version(version)
    return [r for r in table if r.pytorch == base] or [r for r in table if _line(r.pytorch) == _line(base)]


def _as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def python_in_range(python: str, release: Release) -> bool | None:
    """Whether ``python`` (e.g. ``3.11.7``) is in the release's range; None when unpublished."""
    if release.python_min == "-" or release.python_max == "-":
        return None
    current = _as_tuple(python)
    low = _as_tuple(release.python_min)
    high = _as_tuple(release.python_max)
    return low <= current[: len(low)] and current[: len(high)] <= high
