"""Which tasks a wave runs: every Pending task whose dependencies are Complete and whose plan
lints clean, except that two tasks whose scopes may share a file never run in the same wave
(the later one waits for the next wave, and the plan says which entries overlap).

Scopes are compared as patterns, not as the files they match today: a task may create files,
so `src/*.py` and `src/new.py` overlap even before `src/new.py` exists. The comparison is
conservative (it may call two scopes overlapping that never meet, never the reverse).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field

from plan_build.core.fsutil import BYTEWISE, NameRules
from plan_build.dispatch.taskmodel import COMPLETE, PENDING, Task, TaskFile

MAX_JOBS = 4


def default_jobs() -> int:
    """The default bound on tasks run at once: the core count, at most MAX_JOBS."""
    return max(1, min(MAX_JOBS, os.cpu_count() or 1))


def _segments(entry: str) -> list[str]:
    p = entry.strip()
    while p.startswith("./"):
        p = p[2:]
    parts = [s for s in p.strip("/").split("/") if s]
    while parts and parts[-1] == "**":
        parts.pop()  # `dir/**` is `dir`
    return parts


def _glob(seg: str) -> bool:
    return any(ch in seg for ch in "*?[")


def entries_overlap(a: str, b: str, names: NameRules = BYTEWISE) -> bool:
    """True when some path could be allowed by both scope entries."""
    xs, ys = _segments(a), _segments(b)
    for raw_x, raw_y in zip(xs, ys, strict=False):
        if "**" in (raw_x, raw_y):
            return True  # any depth: cannot tell them apart cheaply, so say they may meet
        x, y = names.key(raw_x), names.key(raw_y)
        if _glob(x) and _glob(y):
            continue  # two globs in one segment: assume they can match one name
        if _glob(x):
            if not fnmatch.fnmatchcase(y, x):
                return False
        elif _glob(y):
            if not fnmatch.fnmatchcase(x, y):
                return False
        elif x != y:
            return False
    return True  # one is a prefix of the other: a directory covers everything inside it


def overlap(a: Task, b: Task, names: NameRules = BYTEWISE) -> tuple[str, str] | None:
    """The first pair of scope entries (a's, b's) that may share a path, or None."""
    for x in a.scope:
        for y in b.scope:
            if entries_overlap(x, y, names):
                return x, y
    return None


@dataclass
class WavePlan:
    run: list[Task] = field(default_factory=list)
    # tasks that could have run but wait for a later wave: (task, why)
    later: list[tuple[Task, str]] = field(default_factory=list)
    # tasks that cannot run yet at all: (task, why)
    waiting: list[tuple[Task, str]] = field(default_factory=list)
    # tasks that run now but whose verification needs what a worktree lacks: (task, why)
    warnings: list[tuple[Task, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What the plan says, one line per task."""
        out = [f"  runs now: {t.id}: {t.title}" for t in self.run]
        out += [f"  next wave: {t.id}: {why}" for t, why in self.later]
        out += [f"  not ready: {t.id}: {why}" for t, why in self.waiting]
        out += [f"  warning: {t.id}: {why}" for t, why in self.warnings]
        return out

    def as_json(self) -> dict[str, object]:
        return {
            "run": [t.id for t in self.run],
            "later": [{"task": t.id, "why": why} for t, why in self.later],
            "waiting": [{"task": t.id, "why": why} for t, why in self.waiting],
            "warnings": [{"task": t.id, "why": why} for t, why in self.warnings],
        }


def _lint_problem(tf: TaskFile, task: Task) -> str | None:
    related = {task.id, *task.dependencies}
    for p in tf.errors:
        if p.task is None or p.task in related or "dependency cycle" in p.message:
            return p.message
    return None


def plan(tf: TaskFile, *, jobs: int, names: NameRules = BYTEWISE) -> WavePlan:
    """The next wave of `tf`, in file order, at most `jobs` tasks."""
    out = WavePlan()
    for task in tf.tasks:
        if task.status != PENDING:
            continue
        problem = _lint_problem(tf, task)
        if problem is not None:
            out.waiting.append((task, f"TASKS.md problem: {problem}"))
            continue
        pending = [d for d in task.dependencies if (tf.get(d) or task).status != COMPLETE]
        if pending:
            states = ", ".join(f"{d} ({(tf.get(d) or task).status})" for d in pending)
            out.waiting.append((task, f"waits for {states} to be Complete"))
            continue
        clash = next(
            ((t, overlap(task, t, names)) for t in out.run if overlap(task, t, names)), None
        )
        if clash is not None:
            other, (mine, theirs) = clash[0], clash[1] or ("", "")
            out.later.append(
                (
                    task,
                    f"its scope `{mine}` overlaps {other.id}'s `{theirs}`; tasks that may "
                    "change the same file never run side by side",
                )
            )
            continue
        if len(out.run) >= jobs:
            out.later.append((task, f"the wave is full (--jobs {jobs})"))
            continue
        out.run.append(task)
    return out


__all__ = ["MAX_JOBS", "WavePlan", "default_jobs", "entries_overlap", "overlap", "plan"]
