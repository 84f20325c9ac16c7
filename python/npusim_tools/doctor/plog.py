"""plog triage: errors of past runs, grouped by module and error code (npusim-inspect plog),
each known code explained, and the first failing call of each process named."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from npusim_tools.doctor.known_messages import explain_code, match_messages
from npusim_tools.doctor.report import FAIL, INFO, PASS, WARN, Check
from npusim_tools.native import InspectError, inspect

__all__ = ["plog_roots", "check_plogs", "MAX_GROUPS_SHOWN"]

SECTION = "plog triage"
MAX_GROUPS_SHOWN = 12


def plog_roots(env: Mapping[str, str]) -> list[str]:
    """The log roots of contract §7: ASCEND_PROCESS_LOG_PATH, $ASCEND_WORK_PATH/log and
    $HOME/ascend/log. The runtime writes to the first that is set; the doctor reads every one
    of them, because earlier runs may have had another environment."""
    roots = []
    if env.get("ASCEND_PROCESS_LOG_PATH"):
        roots.append(env["ASCEND_PROCESS_LOG_PATH"])
    if env.get("ASCEND_WORK_PATH"):
        roots.append(os.path.join(env["ASCEND_WORK_PATH"], "log"))
    if env.get("HOME"):
        roots.append(os.path.join(env["HOME"], "ascend", "log"))
    unique = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def _where(occurrence: dict[str, Any]) -> str:
    return f"{occurrence['file']}:{occurrence['line_number']}"


def _explain(group_or_line: dict[str, Any], code: str) -> str:
    explanation = explain_code(code) if code else None
    known = match_messages(group_or_line.get("content", ""))
    parts = []
    if explanation:
        parts.append(explanation)
    for message in known:
        parts.append(f"cause: {message.cause}; fix: {message.fix}")
    return " | ".join(parts)


def check_plogs(roots: Sequence[str], max_bytes_per_file: int | None = None) -> list[Check]:
    arguments = ["plog"]
    if max_bytes_per_file is not None:
        arguments += ["--max-bytes-per-file", str(max_bytes_per_file)]
    try:
        scan = inspect(arguments + list(roots), timeout=300)
    except InspectError as error:
        return [Check(SECTION, "plog scan", FAIL, str(error), "rebuild npusim's native tools (scripts/dev-build.sh)")]
    checks = []
    details = []
    for skipped in scan["skipped"]:
        details.append(f"skipped {skipped['path']}: {skipped['reason']}")
    for path in scan["truncated_files"]:
        details.append(f"read only the first part of {path} (too large)")
    if scan["non_utf8_lines"]:
        details.append(f"{scan['non_utf8_lines']} lines hold bytes that are not UTF-8 (shown escaped)")
    if scan["unparsed_lines"]:
        details.append(f"{scan['unparsed_lines']} lines are not in the plog format")
    present = [r for r in scan["roots"] if r not in scan["missing_roots"]]
    levels = ", ".join(f"{count} {level}" for level, count in sorted(scan["levels"].items()))
    summary = f"{len(scan['files'])} plog files in {', '.join(present) or 'no existing root'}" + (f": {levels}" if levels else "")
    checks.append(Check(SECTION, "plog files", INFO if not scan["files"] else PASS, summary,
                        details=details + [f"missing root: {r}" for r in scan["missing_roots"]]))
    if not scan["groups"]:
        return checks
    group_lines = []
    for group in scan["groups"][:MAX_GROUPS_SHOWN]:
        first = group["first"]
        code = group["code"] or "no code"
        line = f"{group['module']} {code}: {group['count']} x, first {first['timestamp']} at {_where(first)}: {first['content'][:200]}"
        explanation = _explain(first, group["code"])
        group_lines.append(line)
        if explanation:
            group_lines.append(f"    {explanation}")
    if len(scan["groups"]) > MAX_GROUPS_SHOWN:
        group_lines.append(f"... {len(scan['groups']) - MAX_GROUPS_SHOWN} more groups")
    total = sum(g["count"] for g in scan["groups"])
    checks.append(Check(SECTION, "errors by module and code", WARN,
                        f"{total} ERROR lines in {len(scan['groups'])} groups (earlier runs; the first of each group is shown)",
                        "read the first failing call below: later errors are usually its consequences; "
                        "clear old logs to triage only the next run", details=group_lines))
    firsts = scan["first_error_per_process"]
    if firsts:
        latest = firsts[-1]
        codes = latest.get("codes") or []
        explanation = _explain(latest, codes[0] if codes else "")
        summary = (f"process {latest['pid']} ({latest['process_name']}) first failed at {latest['timestamp']} "
                   f"[{latest['module']}] {latest['content'][:300]}")
        details = [f"at {_where(latest)} ({latest['source']})"]
        if explanation:
            details.append(explanation)
        for other in firsts[:-1][-5:]:
            details.append(f"earlier: process {other['pid']} at {other['timestamp']} [{other['module']}] {other['content'][:160]}")
        checks.append(Check(SECTION, "first failing call", WARN, summary,
                            (match_messages(latest["content"])[0].fix if match_messages(latest["content"]) else
                             "fix this call first: the errors after it are usually its consequences"), details=details))
    return checks
