"""What a dispatch tells as it goes: its console lines (start, each attempt, the outcome, a
dry run) and the attempt and dispatch records of the telemetry log."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from plan_build.core import clock, proc
from plan_build.core.ui import Console
from plan_build.dispatch import taskfile
from plan_build.dispatch.evidence import Header, human_seconds, next_step
from plan_build.dispatch.results import REASONS, Attempt
from plan_build.dispatch.taskmodel import REVIEW, Task


def say_start(
    console: Console,
    task: Task,
    header: Header,
    *,
    resumed: bool,
    used: int,
    max_attempts: int,
    unmatched: list[str],
) -> None:
    console.say(
        f"dispatching {task.id} “{task.title}” · recipe {header.recipe_id} · "
        f"memory {header.memory_mode}"
    )
    if resumed:
        console.say(
            f"  resuming dispatch {header.dispatch_id}: {used} of {max_attempts} Codex runs "
            "used; changes are checked against its baseline"
        )
    for pattern in unmatched:
        console.say(f"  note: scope entry `{pattern}` matches no file yet")


def say_stopped(console: Console, stopped: list[int]) -> None:
    """A dead dispatch's processes this one stopped before it began."""
    if stopped:
        console.say(
            f"plan-build: stopped {len(stopped)} process"
            f"{'es' if len(stopped) != 1 else ''} a dead dispatch left running "
            f"(pids {', '.join(map(str, stopped[:8]))})"
        )


def say_attempt(console: Console, a: Attempt) -> None:
    if a.timed_out:
        head = f"codex stopped after {human_seconds(a.codex_seconds)} (time limit)"
    else:
        head = f"codex exit {a.codex_exit} in {human_seconds(a.codex_seconds)}"
    files = f"{len(a.changed)} file{'s' if len(a.changed) != 1 else ''} changed"
    if a.outside:
        files += f", {len(a.outside)} outside the scope"
    elif a.changed:
        files += ", all in scope"
    if a.byproducts:
        files += f" (+{len(a.byproducts)} check by-products)"
    console.say(f"    {head} · {files}")
    for line in a.stderr_tail.splitlines():
        console.say(f"    codex: {line}")


def say_outcome(
    console: Console, task: Task, status: str, reason: str, attempts: list[Attempt]
) -> None:
    arrow = console.arrow()
    if status == REVIEW:
        console.say(
            f"{task.id} {arrow} Review · verified on attempt {attempts[-1].number} · "
            f"evidence in {taskfile.FILENAME}"
        )
    else:
        console.say(f"{task.id} {arrow} Blocked · {REASONS.get(reason, reason)}")
        last = attempts[-1] if attempts else None
        if last and last.outside:
            for p in last.outside:
                console.say(f"    outside the scope: {p}")
            console.say("    the diff is left in the work tree for you to decide")
    console.say(f"  next: {next_step(status, reason, task.id)}")


def write_dry_run(write: Callable[[str], Any], argv: list[str], prompt: str, task: Task) -> None:
    write(f"argv: {proc.quote(argv)}\n")
    write("--- prompt " + "-" * 60 + "\n")
    write(prompt if prompt.endswith("\n") else prompt + "\n")
    write("-" * 71 + "\n")
    write(f"would dispatch {task.id} (status {task.status} → In Progress)\n")


def _record_head(kind: str, header: Header, task: Task) -> dict[str, Any]:
    """The fields every telemetry record starts with."""
    return {
        "kind": kind,
        "at": clock.stamp(),
        "dispatch": header.dispatch_id,
        "task": task.id,
        "recipe": {"id": header.recipe_id, "fingerprint": header.fingerprint},
        "memory_mode": header.memory_mode,
        "session": header.session,
    }


def attempt_record(header: Header, task: Task, a: Attempt) -> dict[str, Any]:
    return {
        **_record_head("attempt", header, task),
        **{k: v for k, v in a.as_json().items() if k not in ("changed", "outside_scope")},
        "verification": None
        if a.verification is None
        else {
            "passed": a.verified,
            "commands": [
                {
                    "program": os.path.basename(v.program),
                    "exit": v.returncode,
                    "seconds": round(v.seconds, 3),
                    "timed_out": v.timed_out,
                }
                for v in a.verification
            ],
        },
        "changed_files": len(a.changed),
        "outside_scope": len(a.outside),
    }


def dispatch_record(
    header: Header,
    task: Task,
    status: str,
    reason: str,
    *,
    slot: str,
    attempts: list[Attempt],
    seconds: float,
    usage_sum: dict[str, Any],
) -> dict[str, Any]:
    used = attempts[-1].number if attempts else 0
    return {
        **_record_head("dispatch", header, task),
        "slot": slot,
        "outcome": status,
        "reason": reason,
        "attempts": used,
        "corrections": max(0, used - 1),
        "exhausted": reason == "corrections_exhausted",
        "seconds": round(seconds, 3),
        # the runs that reported usage, summed, and how many did not (docs/adr/0175)
        "usage_sum": usage_sum,
    }
