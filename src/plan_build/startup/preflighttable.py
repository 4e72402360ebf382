"""The readiness report as the user sees it: one row per check or group of checks, the fix under
each failure, and the one-line form when everything passed on a terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from plan_build.core.checks import Check
from plan_build.core.context import Session
from plan_build.core.gitrepo import Repo


class Report(Protocol):
    """What the table reads of preflight's Report."""

    @property
    def mode(self) -> str: ...
    @property
    def checks(self) -> list[Check]: ...
    @property
    def repo(self) -> Repo | None: ...
    @property
    def header(self) -> str: ...
    @property
    def branch(self) -> str | None: ...


LABELS = {
    "terminal": "terminal",
    "git.worktree": "git work tree",
    "claude.safe_mode": "safe mode",
    "skill.readable": "workflow skill",
    "codex.plugin.agentmemory": "Codex plugin",
    "memory.server": "AgentMemory",
    "yolo.root": "--yolo as root",
    "auggie.login": "Auggie login",
    "wsl.drive": "WSL drive",
    "wsl.exe": "Windows agents",
    "sandbox.layer": "sandbox",
}
GROUPS = {"tool.": "tools", "claude.plugin.": "Claude plugins"}


def _rows(checks: Sequence[Check]) -> list[tuple[str, str, list[Check]]]:
    rows: list[tuple[str, str, list[Check]]] = []
    for check in checks:
        group = next(
            (label for prefix, label in GROUPS.items() if check.id.startswith(prefix)), None
        )
        if group and rows and rows[-1][0] == group:
            rows[-1][2].append(check)
        else:
            rows.append((group or LABELS.get(check.id, check.id), check.id, [check]))
    return rows


def render(report: Report, session: Session) -> str:
    con = session.console
    lines = [report.header, ""]
    for label, _, group in _rows(report.checks):
        worst = next(
            (s for s in ("fail", "warn", "pass", "skip") if any(c.status == s for c in group)),
            "pass",
        )
        passing = [c for c in group if c.status == "pass"]
        if len(group) > 1 and worst == "pass":
            lines.append(f"  {con.mark('pass')} {label:<17} " + ", ".join(_brief(c) for c in group))
            continue
        if len(group) > 1 and passing:
            lines.append(
                f"  {con.mark('pass')} {label:<17} " + ", ".join(_brief(c) for c in passing)
            )
        shown: set[tuple[str, str | None]] = set()
        for c in group if len(group) == 1 else [c for c in group if c.status != "pass"]:
            if (c.detail, c.remediation) in shown:  # one cause, several checks: say it once
                continue
            shown.add((c.detail, c.remediation))
            # one `tools` row for the tools found; each missing or broken tool its own row
            own = c.id.removeprefix("tool.") if c.id.startswith("tool.") else label
            row = own if c.status != "pass" else label
            lines.append(f"  {con.mark(c.status)} {row:<17} {c.detail}")
            if c.remediation and c.status in ("fail", "warn"):
                indent = " " * (len(con.mark(c.status)) + 3)
                lines.append(f"{indent}{'':<17} {con.arrow()} {c.remediation}")
    return "\n".join(lines)


def _brief(check: Check) -> str:
    return (
        check.detail.split(" (")[0] if check.id.startswith("tool.") else check.detail.split(" ")[0]
    )


def render_ready(report: Report, session: Session) -> str:
    repo = report.repo
    where = repo.root.name if repo else session.cwd.name
    branch = report.branch
    return f"ready · {report.mode} · {where}" + (f" ({branch})" if branch else "")
