"""How a dispatch's findings are written down: the evidence block plan-build puts into the
task in TASKS.md, and the one-line next step. (The findings themselves are in `results`.)

Evidence is Markdown meant for the architect and the reviewer: per attempt the role, model,
Codex's exit and duration, reported token usage (or "unknown"), the changed files against the
scope, and each verification command with its exit code and, when it failed, the tail of its
output (credentials withheld).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from plan_build.core import codexusage, redact
from plan_build.core.render import fence
from plan_build.dispatch.results import REASONS, SCOPE_MARKER, Attempt
from plan_build.dispatch.taskmodel import BLOCKED, REVIEW

EVIDENCE_TAIL_LINES = 15
EVIDENCE_TAIL_CHARS = 1_500


def human_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def tail(text: str, lines: int, chars: int) -> str:
    kept = text.strip("\n").splitlines()[-lines:]
    out = "\n".join(kept)
    if len(out) > chars:
        out = "…" + out[-chars:]
    return out


def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def evidence_text(text: str, root: Path, home: Path | None) -> str:
    """Text for TASKS.md (a committed file): paths relative to the repository, never the
    home directory."""
    text = text.replace(str(root) + os.sep, "").replace(str(root), ".")
    if home is not None and str(home) not in ("", "/"):
        text = text.replace(str(home), "~")
    return text


@dataclass(frozen=True)
class Header:
    dispatch_id: str
    started_at: str
    recipe_id: str
    fingerprint: str
    memory_mode: str
    session: str | None = None  # the session it ran in (telemetry.session_of), when known

    def line(self) -> str:
        stamp = self.started_at.replace("T", " ").replace("Z", " UTC")
        return (
            f"**Dispatch {self.dispatch_id}** · {stamp} · recipe {self.recipe_id} "
            f"`{self.fingerprint[:19]}…` · memory {self.memory_mode}"
        )


def running_block(header: Header, task_id: str, attempt: int, role: str, pid: int) -> str:
    return (
        f"{header.line()}\n"
        f"Outcome: In Progress · attempt {attempt} ({role}) running under pid {pid}\n"
        f"If no dispatch is running any more, rerun `plan-build dispatch {task_id}` to "
        "resume; the work tree keeps every change.\n"
    )


def interrupted_block(
    header: Header,
    task_id: str,
    *,
    what: str,
    phase: str,
    stopped: str,
    attempts: list[Attempt],
    outside: list[str],
    env: Mapping[str, str],
) -> str:
    """The task stays In Progress after an interruption: what stopped it, the attempts that
    finished, and how to resume."""
    lines = [
        header.line(),
        f"Outcome: In Progress · interrupted by {one_line(what)} during {phase}; {stopped}",
    ]
    for a in attempts:
        lines.extend(attempt_lines(a, env))
    if outside:
        lines.append(
            "- Changed outside the scope before the stop: " + ", ".join(f"`{p}`" for p in outside)
        )
    lines.append(
        f"- Resume: review the work tree (every change is kept), then rerun "
        f"`plan-build dispatch {task_id}`; or set Status to Blocked to stop here."
    )
    return "\n".join(lines) + "\n"


def failed_block(
    header: Header,
    task_id: str,
    *,
    phase: str,
    what: str,
    attempts: list[Attempt],
    env: Mapping[str, str],
) -> str:
    """plan-build itself failed: Blocked (reason `error`) with its message."""
    lines = [
        header.line(),
        f"Outcome: Blocked · plan-build stopped during {phase}: {one_line(what)}",
    ]
    for a in attempts:
        lines.extend(attempt_lines(a, env))
    lines.append(f"- Next: {next_step(BLOCKED, 'error', task_id)}")
    return "\n".join(lines) + "\n"


def attempt_lines(a: Attempt, env: Mapping[str, str]) -> list[str]:
    usage = a.events.usage
    tok = codexusage.words(usage) if usage.known else "tokens unknown"
    if a.timed_out:
        codex = f"codex stopped after {human_seconds(a.codex_seconds)} (time limit)"
    elif a.codex_exit is None:
        codex = "codex did not finish"
    else:
        codex = f"codex exit {a.codex_exit} in {human_seconds(a.codex_seconds)}"
    lines = [f"- Attempt {a.number} · {a.role} ({a.model}, {a.reasoning}) · {codex} · {tok}"]
    lines.extend(change_lines(a))
    lines.extend(verification_lines(a, env))
    return lines


def verification_lines(a: Attempt, env: Mapping[str, str]) -> list[str]:
    if a.verification is None:
        return ["  - Verification: not run"]
    lines = []
    for v in a.verification:
        if v.timed_out:
            status = f"stopped after {v.timeout}s (FAIL)"
        elif v.returncode is None:
            status = "could not start (FAIL)"
        else:
            status = f"exit {v.returncode} ({'pass' if v.passed else 'FAIL'})"
        lines.append(f"  - `{v.text}` · {status} · {human_seconds(v.seconds)}")
        if not v.passed and v.output.strip():
            kept = redact.redact(tail(v.output, EVIDENCE_TAIL_LINES, EVIDENCE_TAIL_CHARS), env)[0]
            lines.extend("    " + ln for ln in fence(kept).splitlines())
    return lines


def final_block(
    header: Header,
    *,
    task_id: str,
    status: str,
    reason: str,
    attempts: list[Attempt],
    max_attempts: int,
    changed: list[str],
    seconds: float,
    env: Mapping[str, str],
) -> str:
    if reason == "verified":
        summary = f"verified on attempt {attempts[-1].number} of {max_attempts}"
    else:
        summary = REASONS.get(reason, reason)
    lines = [header.line(), f"Outcome: {status} · {summary} · {human_seconds(seconds)}"]
    for a in attempts:
        lines.extend(attempt_lines(a, env))
    if changed:
        lines.append("- Changed since the dispatch began: " + ", ".join(f"`{p}`" for p in changed))
    lines.append(f"- Next: {next_step(status, reason, task_id)}")
    return "\n".join(lines) + "\n"


def change_lines(a: Attempt) -> list[str]:
    lines = []
    if a.changed:
        shown = ", ".join(f"`{p}`" for p in a.changed[:20])
        more = f" and {len(a.changed) - 20} more" if len(a.changed) > 20 else ""
        note = "all in scope" if not a.outside else f"{len(a.outside)} outside the scope"
        lines.append(f"  - Changed: {shown}{more} ({note})")
    else:
        lines.append("  - Changed: nothing")
    if a.outside:
        lines.append("  - Outside the scope: " + ", ".join(f"`{p}`" for p in a.outside))
    if a.ignored:
        lines.append("  - Ignored by git: " + ", ".join(f"`{p}`" for p in a.ignored[:20]))
    if a.byproducts:
        more = f" and {len(a.byproducts) - 10} more" if len(a.byproducts) > 10 else ""
        lines.append(
            "  - By-products of running checks (not judged against the scope): "
            + ", ".join(f"`{p}`" for p in a.byproducts[:10])
            + more
        )
    lines.extend(f"  - {move}" for move in a.git_moves)
    if a.events.sandbox_errors:
        lines.append(
            f"  - Sandbox error ({len(a.events.sandbox_errors)} command"
            f"{'s' if len(a.events.sandbox_errors) != 1 else ''}): "
            f"{one_line(a.events.sandbox_errors[0])}"
        )
    for git in a.events.git_commands[:5]:
        lines.append(f"  - Codex ran a git command the prompt forbids: `{one_line(git)}`")
    lines.extend(f"  - {note}" for note in a.notes)
    if a.stderr_tail:
        lines.append("  - Codex's stderr (last lines):")
        lines.extend("    " + ln for ln in fence(a.stderr_tail).splitlines())
    reported = a.events.failures[-2:]
    if not reported and a.codex_exit not in (0, None) and a.events.errors:
        reported = a.events.errors[-1:]
    lines.extend(f"  - Codex reported: {one_line(r)}" for r in reported)
    if a.outcome == "scope_requested":
        ask = next(
            (
                ln.strip()
                for ln in a.final_message.splitlines()
                if ln.strip().startswith(SCOPE_MARKER)
            ),
            "",
        )
        lines.append(f"  - Codex asked: {one_line(ask)}")
    return lines


def next_step(status: str, reason: str, task_id: str, platform: str = sys.platform) -> str:
    if status == REVIEW:
        return (
            "review the diff (plan-build review.impl or review.repeat), record the CodeRabbit "
            "outcome, then mark the task Complete"
        )
    if reason in ("scope", "scope_requested"):
        return (
            "assess the scope change, update SPEC.md/TASKS.md/ADR.md, get the user's approval, "
            f"decide what happens to the out-of-scope edits, then plan-build dispatch {task_id}"
        )
    if reason == "corrections_exhausted":
        return (
            "ask the user whether to revise the architecture, scope or acceptance criteria; "
            "start no dependent task"
        )
    if reason == "setup_failed":
        return (
            "fix the worktree setup (worktree.setup in .plan-build.yaml; its output is named "
            f"above), set {task_id} back to Pending, then run plan-build dispatch --wave"
        )
    if reason == "environment":
        return (
            "bring what the verification needs into the worktree (.worktreeinclude, "
            "worktree.symlinkDirectories in .claude/settings.json, or worktree.setup in "
            f".plan-build.yaml), or run the task alone: plan-build dispatch {task_id}; its "
            "result is in the kept worktree"
        )
    if reason == "git_state":
        return "inspect git log and git status; undo what Codex committed or staged yourself"
    if reason == "no_change":
        return (
            "read what Codex said in the evidence; the task may be done already, impossible "
            "within its scope, or unclear: revise it (after the user approves), then dispatch "
            f"{task_id} again"
        )
    if reason == "error":
        return f"fix what the message says, then plan-build dispatch {task_id} again"
    if reason == "sandbox_unavailable" and platform == "darwin":
        return (
            "make Codex's sandbox work: macOS Seatbelt (sandbox-exec) cannot start inside "
            "another sandbox, so run plan-build from a plain terminal, not from a sandboxed "
            "app or a Codex command; check with `sandbox-exec -p '(version 1)(allow default)' "
            f"true`, then plan-build dispatch {task_id} again"
        )
    if reason == "sandbox_unavailable":
        return (
            "make Codex's sandbox work: bubblewrap needs unprivileged user namespaces "
            "(sysctl user.max_user_namespaces > 0 and kernel.unprivileged_userns_clone=1; in a "
            "container, allow unshare); check with `unshare -U true`, then "
            f"plan-build dispatch {task_id} again"
        )
    return (
        "check that codex works (codex login status; network), then "
        f"plan-build dispatch {task_id} again"
    )
