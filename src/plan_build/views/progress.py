"""The session's architect tasks and its last verification, as their records hold them.

TASKS.md is read as it is in the work tree now; each task's dispatch state file says how its
last dispatch ended and, for the one in progress, which attempt runs. The verify record says
what was checked and for which tree: stale when the change has moved since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plan_build.core import codexusage, locks
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo

STATE_KEYS = ("pending", "in_progress", "blocked", "review", "complete", "unknown")


def _key(status: str | None) -> str:
    return (status or "unknown").lower().replace(" ", "_")


@dataclass(frozen=True)
class InProgress:
    id: str
    title: str
    attempt: int | None  # the Codex run in progress (1: first, 2+: corrections)
    role: str | None
    running: bool | None  # its dispatch process is alive (None: no dispatch state)
    usage: codexusage.Summed | None = None  # its finished runs' tokens (None: not recorded)
    wave: bool = False  # one of a wave's unfinished tasks: `dispatch --wave` resumes it
    # every task In Progress (a wave runs several at once), this one first
    all_ids: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "wave": self.wave,
            "all": list(self.all_ids or (self.id,)),
            "title": self.title,
            "attempt": self.attempt,
            "role": self.role,
            "running": self.running,
            "usage": self.usage.as_json() if self.usage is not None else None,
        }


@dataclass(frozen=True)
class TaskFacts:
    present: bool = False  # there is a TASKS.md
    total: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATE_KEYS, 0))
    in_progress: InProgress | None = None
    others_in_progress: int = 0
    last_dispatch: dict[str, Any] | None = None  # task, status, reason, at
    problem: str | None = None
    # per dispatched task, in TASKS.md's order: the token use of its last dispatch, as Codex
    # reported it (a dispatch recorded before plan-build kept it: unknown)
    usage: tuple[tuple[str, codexusage.Summed], ...] = ()
    kept: tuple[tuple[str, str, str], ...] = ()  # worktrees a wave kept: task, state, path

    def as_json(self) -> dict[str, Any]:
        return {
            "present": self.present,
            "total": self.total,
            "counts": dict(self.counts),
            "in_progress": self.in_progress.as_json() if self.in_progress else None,
            "last_dispatch": self.last_dispatch,
            "problem": self.problem,
            "usage": [{"task": task, **summed.as_json()} for task, summed in self.usage],
            "kept_worktrees": [{"task": t, "state": s, "path": p} for t, s, p in self.kept],
        }


def kept_worktrees(repo: Repo) -> tuple[tuple[str, str, str], ...]:
    """The worktrees waves in this repository kept (a failure, a conflict, a stop)."""
    from plan_build.dispatch import wavestate

    try:
        return tuple(wavestate.kept(repo))
    except (OSError, PlanBuildError):
        return ()


def _wave_tasks(repo: Repo) -> list[str]:
    from plan_build.dispatch import wavestate

    try:
        return wavestate.unfinished(wavestate.read(repo))
    except (OSError, PlanBuildError):
        return []


def _running(
    repo: Repo, task_id: str
) -> tuple[int | None, str | None, bool | None, codexusage.Summed | None]:
    from plan_build.dispatch import taskstate

    running = taskstate.read(repo, task_id).get("running")
    if not isinstance(running, dict):
        return None, None, None, None
    used = running.get("usage_sum")
    attempt = running.get("attempts")
    pid = running.get("pid")
    alive = None
    if isinstance(pid, int):
        try:  # a process started after the state was last written is not its dispatch
            written: float | None = taskstate.path(repo, task_id).stat().st_mtime
        except OSError:
            written = None
        alive = locks.owner_alive(pid, written=written)
    return (
        attempt if isinstance(attempt, int) and attempt > 0 else None,
        running.get("role") if isinstance(running.get("role"), str) else None,
        alive,
        codexusage.sum_from_json(used) if isinstance(used, dict) else None,
    )


def _last_dispatch(
    repo: Repo, ids: list[str]
) -> tuple[dict[str, Any] | None, tuple[tuple[str, codexusage.Summed], ...]]:
    """The newest dispatch's end, and each dispatched task's token use (last dispatch)."""
    from plan_build.dispatch import taskstate

    newest: dict[str, Any] | None = None
    usage: list[tuple[str, codexusage.Summed]] = []
    for task_id in ids:
        last = taskstate.last(repo, task_id)
        if last:
            usage.append((task_id, codexusage.sum_from_json(last.get("usage_sum"))))
        at = last.get("at")
        if isinstance(at, str) and (newest is None or at > newest["at"]):
            newest = {
                "task": task_id,
                "status": last.get("status"),
                "reason": last.get("reason"),
                "at": at,
            }
            if isinstance(last.get("detail"), str):  # e.g. a failed worktree setup's output
                newest["detail"] = last["detail"]
    return newest, tuple(usage)


def tasks(repo: Repo) -> TaskFacts:
    from plan_build.dispatch import taskfile
    from plan_build.dispatch.taskmodel import IN_PROGRESS

    path = repo.root / taskfile.FILENAME
    if not path.is_file():
        return TaskFacts()
    try:
        tf = taskfile.read(path)
        counts = dict.fromkeys(STATE_KEYS, 0)
        for t in tf.tasks:
            key = _key(t.status)
            counts[key if key in counts else "unknown"] += 1
        busy = [t for t in tf.tasks if t.status == IN_PROGRESS]
        current = None
        if busy:
            attempt, role, alive, used = _running(repo, busy[0].id)
            waved = _wave_tasks(repo)
            current = InProgress(
                busy[0].id,
                busy[0].title,
                attempt,
                role,
                alive,
                used,
                wave=busy[0].id in waved,
                all_ids=tuple(t.id for t in busy),
            )
        last, usage = _last_dispatch(repo, [t.id for t in tf.tasks])
        return TaskFacts(
            present=True,
            total=len(tf.tasks),
            counts=counts,
            in_progress=current,
            others_in_progress=max(0, len(busy) - 1),
            last_dispatch=last,
            problem=f"{len(tf.errors)} problem(s) in {taskfile.FILENAME}" if tf.errors else None,
            usage=usage,
            kept=kept_worktrees(repo),
        )
    except PlanBuildError as exc:
        return TaskFacts(present=True, problem=exc.what)


@dataclass(frozen=True)
class VerifyFacts:
    ran: bool = False
    ok: bool | None = None
    at: str | None = None
    failed: tuple[str, ...] = ()
    tree: str | None = None
    stale: bool | None = None  # the change moved since (None: never ran, or nothing to compare)
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "ok": self.ok,
            "at": self.at,
            "failed": list(self.failed),
            "tree": self.tree,
            "stale": self.stale,
            "problem": self.problem,
        }


def verification(repo: Repo, session_id: str, tree: str | None) -> VerifyFacts:
    """The last verify record against `tree`, the change as it is now (None: unknown)."""
    from plan_build.delivery import verifyrecord

    try:
        record = verifyrecord.last_record(repo, session_id)
    except PlanBuildError as exc:
        return VerifyFacts(problem=exc.what)
    if record is None:
        return VerifyFacts()
    change = record.get("change")
    checked = change.get("tree") if isinstance(change, dict) else None
    rows = record.get("checks")
    failed = tuple(
        str(c.get("id"))
        for c in (rows if isinstance(rows, list) else [])
        if isinstance(c, dict) and c.get("status") == "fail"
    )
    return VerifyFacts(
        ran=True,
        ok=bool(record.get("ok")),
        at=record.get("when") if isinstance(record.get("when"), str) else None,
        failed=failed,
        tree=checked if isinstance(checked, str) else None,
        stale=None if tree is None or not isinstance(checked, str) else checked != tree,
    )


__all__ = ["InProgress", "TaskFacts", "VerifyFacts", "tasks", "verification"]
