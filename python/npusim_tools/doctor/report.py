"""Results of the doctor's checks, and their human and JSON forms."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Iterable

__all__ = ["Check", "Report", "PASS", "WARN", "FAIL", "INFO"]

PASS, WARN, FAIL, INFO = "pass", "warn", "fail", "info"
_LABELS = {PASS: "PASS", WARN: "WARN", FAIL: "FAIL", INFO: "INFO"}


@dataclass
class Check:
    section: str
    name: str
    status: str
    summary: str
    fix: str = ""
    details: list[str] = field(default_factory=list)


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def extend(self, checks: Iterable[Check]) -> None:
        self.checks.extend(checks)

    def counts(self) -> dict[str, int]:
        counts = {PASS: 0, WARN: 0, FAIL: 0, INFO: 0}
        for check in self.checks:
            counts[check.status] += 1
        return counts

    @property
    def failed(self) -> bool:
        return any(check.status == FAIL for check in self.checks)

    def to_json(self) -> str:
        return json.dumps(
            {"checks": [asdict(c) for c in self.checks], "summary": self.counts(), "ok": not self.failed},
            indent=2,
            ensure_ascii=False,
        )

    def to_text(self, verbose: bool = False) -> str:
        lines = ["npusim doctor"]
        section = None
        for check in self.checks:
            if check.section != section:
                section = check.section
                lines.append("")
                lines.append(f"== {section}")
            lines.append(f"[{_LABELS[check.status]}] {check.name}: {check.summary}")
            if check.fix and check.status in (WARN, FAIL):
                lines.append(f"       fix: {check.fix}")
            if check.details and (verbose or check.status in (WARN, FAIL)):
                shown = check.details if verbose else check.details[:12]
                lines.extend(f"       {detail}" for detail in shown)
                if len(check.details) > len(shown):
                    lines.append(f"       ... {len(check.details) - len(shown)} more (--verbose shows all)")
        counts = self.counts()
        lines.append("")
        lines.append(
            f"{counts[PASS]} passed, {counts[WARN]} warnings, {counts[FAIL]} failed, {counts[INFO]} informational"
        )
        return "\n".join(lines) + "\n"
