"""What must hold before a task is dispatched: a well-formed id, a TASKS.md without problems
that concern it, its dependencies Complete, no other task In Progress, and a Blocked task
revised since it was blocked for a reason a plain retry cannot fix."""

from __future__ import annotations

import re
from pathlib import Path

from plan_build.core.config import FILENAME, Config
from plan_build.core.errors import PlanBuildError, usage
from plan_build.core.fsutil import BYTEWISE, NameRules
from plan_build.core.gitrepo import Repo
from plan_build.dispatch import taskfile, taskstate
from plan_build.dispatch.results import REASONS
from plan_build.dispatch.scope import DEFAULT_BYPRODUCTS, Byproducts, byproduct_problem
from plan_build.dispatch.taskmodel import BLOCKED, COMPLETE, IN_PROGRESS, Task, TaskFile

# Blocked for these reasons, the same task text would fail the same way: refuse to redispatch
# it unchanged. Codex failures and timeouts (network, auth) may succeed on a plain retry.
NEEDS_REVISION = {"scope", "scope_requested", "corrections_exhausted", "git_state", "no_change"}


def normalise_id(raw: str) -> str:
    value = raw.strip()
    if taskfile.TASK_ID.match(value):
        return value
    m = re.fullmatch(r"(?i)task[-_ ]?(\d+)", value)
    hint = f"TASK-{int(m.group(1)):03d}" if m else "TASK-001"
    raise usage(f"{raw!r} is not a task id", f"use the id from TASKS.md, e.g. {hint}")


def load(path: Path, task_id: str) -> tuple[TaskFile, Task]:
    tf = taskfile.read(path)
    task = tf.get(task_id)
    if task is None:
        known = [t.id for t in tf.tasks]
        listing = ", ".join(known[:12]) + (" …" if len(known) > 12 else "")
        raise usage(
            f"{task_id} is not in {taskfile.FILENAME}" + (f" (tasks: {listing})" if known else ""),
            "check the id with: plan-build tasks",
        )
    return tf, task


def _dependency_closure(tf: TaskFile, task: Task) -> set[str]:
    seen: set[str] = set()
    todo = [task.id]
    while todo:
        tid = todo.pop()
        if tid in seen:
            continue
        seen.add(tid)
        t = tf.get(tid)
        if t is not None:
            todo.extend(t.dependencies)
    return seen


def check(repo: Repo, tf: TaskFile, task: Task, alongside: frozenset[str] = frozenset()) -> None:
    """Refuse (a usage error saying what to do) a task that may not be dispatched now.
    `alongside`: the other tasks of its wave, which may be In Progress beside it."""
    related = _dependency_closure(tf, task)
    blocking = [
        p
        for p in tf.errors
        if p.task is None
        or p.task in related
        or "In Progress" in p.message
        or "dependency cycle" in p.message
    ]
    if blocking:
        lines = [p.human() for p in blocking[:10]]
        more = f"\n    … and {len(blocking) - 10} more" if len(blocking) > 10 else ""
        raise usage(
            f"{taskfile.FILENAME} has problems that stop {task.id}:\n    "
            + "\n    ".join(lines)
            + more,
            "fix those lines, then check with: plan-build tasks",
        )
    if task.status == COMPLETE:
        raise usage(
            f"{task.id} is already Complete",
            f"to run it again, set its Status to Pending in {taskfile.FILENAME} and say why",
        )
    for dep in task.dependencies:
        other = tf.get(dep)
        if other is not None and other.status != COMPLETE:
            raise usage(
                f"{task.id} depends on {dep}, which is {other.status}",
                f"finish {dep} first (plan-build dispatch {dep}), or correct the Dependencies line",
            )
    running = [
        t for t in tf.tasks if t.status == IN_PROGRESS and t.id != task.id and t.id not in alongside
    ]
    waved = wave_tasks(repo)
    if task.id in waved and not alongside:
        raise usage(
            f"{task.id} belongs to a wave ({waved[task.id]}); a dispatch of it alone would "
            "take the other tasks' records and files for its own",
            "resume the wave: plan-build dispatch --wave",
        )
    if running:
        other = running[0]
        again = (
            "plan-build dispatch --wave" if other.id in waved else f"plan-build dispatch {other.id}"
        )
        raise usage(
            f"{other.id} is In Progress; only one task may be",
            f"finish {other.id} first; if its dispatch was interrupted, resume it with: {again}",
        )
    if task.status == BLOCKED:
        last = taskstate.last(repo, task.id)
        if last.get("reason") in NEEDS_REVISION and last.get("digest") == tf.content_digest(task):
            raise usage(
                f"{task.id} is Blocked ({REASONS.get(last['reason'], last['reason'])}) and "
                "has not changed since",
                "revise its scope, prompt or acceptance criteria in TASKS.md (after the "
                "user approves), then dispatch it again",
            )


def wave_tasks(repo: Repo) -> dict[str, str]:
    """The tasks of this work tree's wave (running or stopped) that it has not finished:
    task → its state in the wave's record."""
    from plan_build.dispatch import wavestate

    try:
        record = wavestate.read(repo)
    except PlanBuildError:
        return {}
    tasks = record.get("tasks") or {}
    return {t: str(tasks[t].get("state")) for t in wavestate.unfinished(record)}


def byproducts(cfg: Config, names: NameRules = BYTEWISE) -> Byproducts:
    """The default check by-products plus the project's `dispatch.byproducts` globs."""
    extra = cfg.get("dispatch.byproducts", []) or []
    for pattern in extra:
        why = byproduct_problem(pattern)
        if why:
            raise usage(
                f"{FILENAME}: dispatch.byproducts entry {pattern!r} {why}",
                "use globs such as `.cache/` or `*.log`, relative to the repository root",
            )
    return Byproducts((*DEFAULT_BYPRODUCTS, *extra), names)
