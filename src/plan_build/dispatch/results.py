"""What a dispatch found: each attempt's record (Codex's run, what it changed, each
verification command) and the dispatch's result, with the reason names they end on.

These are data; `evidence` writes them down for TASKS.md and `report` for the console and log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plan_build.core.errors import ExitCode
from plan_build.dispatch import telemetry
from plan_build.dispatch.taskmodel import IN_PROGRESS, PENDING, REVIEW

SCOPE_MARKER = "SCOPE EXPANSION NEEDED:"  # the line Codex writes when the scope is too small

REASONS = {
    "verified": "verification passed",
    "scope": "scope expansion needed: Codex changed files outside the allowed scope",
    "scope_requested": "scope expansion needed: Codex reported the task needs files outside the "
    "allowed scope",
    "git_state": "Codex changed git state (HEAD or the index), which is not allowed",
    "codex_timeout": "Codex did not finish within the time limit and was stopped",
    "codex_failed": "Codex exited with an error",
    "no_events": "Codex printed no events (no --json output)",
    "corrections_exhausted": "verification still fails after the last allowed correction",
    "interrupted": "interrupted (Ctrl-C)",
    "sandbox_unavailable": "Codex's sandbox could not start, so none of its commands ran",
    "error": "plan-build stopped on an error",
    "no_change": "Codex made no change in two attempts in a row while verification fails",
    "setup_failed": "the worktree setup command (worktree.setup) failed, so Codex never ran",
    "environment": "verification needs what the wave's worktree lacks (a path git ignores in "
    "your work tree): the environment's failure, not the task's",
}


@dataclass
class VerifyRun:
    text: str
    program: str
    returncode: int | None
    seconds: float
    timed_out: bool
    output: str
    timeout: int

    @property
    def passed(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def as_json(self) -> dict[str, Any]:
        return {
            "command": self.text,
            "exit": self.returncode,
            "seconds": round(self.seconds, 3),
            "timed_out": self.timed_out,
            "passed": self.passed,
        }


@dataclass
class Attempt:
    number: int
    role: str
    model: str
    reasoning: str
    codex_exit: int | None = None
    codex_seconds: float = 0.0
    timed_out: bool = False
    events: telemetry.CodexEvents = field(default_factory=telemetry.CodexEvents)
    final_message: str = ""
    changed: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    git_moves: list[str] = field(default_factory=list)
    verification: list[VerifyRun] | None = None
    outcome: str = "running"
    notes: list[str] = field(default_factory=list)  # more evidence lines, e.g. an undone edit
    ignored: list[str] = field(default_factory=list)  # changed paths git ignores (in changed)
    stderr_tail: str = ""  # Codex's last stderr lines when it failed (redacted, relative paths)
    byproducts: list[str] = field(default_factory=list)  # check caches: listed, not judged

    @property
    def verified(self) -> bool:
        return self.verification is not None and all(v.passed for v in self.verification)

    def as_json(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "role": self.role,
            "model": self.model,
            "reasoning": self.reasoning,
            "codex": {
                "exit": self.codex_exit,
                "seconds": round(self.codex_seconds, 3),
                "timed_out": self.timed_out,
                "events": self.events.events,
                "thread_id": self.events.thread_id or telemetry.UNKNOWN,
            },
            "usage": self.events.usage.as_json(),  # Codex's own figures; null: unknown
            "changed": self.changed,
            "outside_scope": self.outside,
            "ignored": self.ignored,
            "byproducts": self.byproducts,
            "git_moves": self.git_moves,
            "verification": [v.as_json() for v in self.verification]
            if self.verification is not None
            else None,
            "outcome": self.outcome,
        }


@dataclass
class DispatchResult:
    task_id: str
    dispatch_id: str
    status: str
    reason: str
    attempts: list[Attempt]
    changed: list[str]
    seconds: float
    recipe: dict[str, Any]
    dry_run: bool = False

    @property
    def exit_code(self) -> ExitCode:
        if self.dry_run or self.status in (REVIEW, PENDING, IN_PROGRESS):
            return ExitCode.OK
        return ExitCode.BLOCKED

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task_id,
            "dispatch": self.dispatch_id,
            "status": self.status,
            "reason": self.reason,
            "detail": REASONS.get(self.reason, self.reason),
            "attempts": [a.as_json() for a in self.attempts],
            "changed": self.changed,
            "seconds": round(self.seconds, 3),
            "recipe": {"id": self.recipe["id"], "fingerprint": self.recipe["fingerprint"]},
            "dry_run": self.dry_run,
        }
