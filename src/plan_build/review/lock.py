"""The per-workflow lock: `<workflow>/.lock/`, made with an atomic mkdir, holding `pid`.

Compatible with codex-review in both directions: its locks stop plan-build and plan-build's
stop it. A lock is stale when its pid is missing, garbage or dead - or, unlike codex-review,
when the live process with that pid started after the lock was taken (the pid was reused):
the core rule, `plan_build.core.locks.owner_alive`, with the lock dir's mtime as "taken" because
the shared format records no start time. A lock younger than a few seconds without a pid is
still being written and counts as held.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.locks import owner_alive
from plan_build.review.layout import WorkflowDir, guard

FRESH = 5.0  # seconds a lock without a pid file is presumed to be mid-creation
DIR_MODE = 0o755


class LockHeld(PlanBuildError):
    def __init__(self, wdir: WorkflowDir, pid: int | None, owner_cwd: str = "") -> None:
        who = f"pid {pid}" if pid else "a process that is still starting"
        super().__init__(
            f"workflow '{wdir.id}' is already being reviewed by another process ({who})\n"
            f"  Project root: {wdir.root}\n"
            f"  Owner cwd:    {owner_cwd or '(unowned)'}\n"
            f"  Workflow dir: {wdir.path}\n"
            f"  Lock dir:     {wdir.lock}",
            f"wait for it to finish{f' (or stop it: kill {pid})' if pid else ''}, then retry",
            code=ExitCode.BLOCKED,
        )
        self.pid = pid


def holder(lock: Path) -> int | None:
    """The pid in a lock dir, None when missing or not a positive decimal."""
    try:
        text = (lock / "pid").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def is_stale(lock: Path) -> bool:
    pid = holder(lock)
    try:
        taken = lock.stat().st_mtime
    except FileNotFoundError:
        return True
    if pid is None:
        return time.time() - taken > FRESH
    return not owner_alive(pid, written=taken)


def held_by_other(wdir: WorkflowDir) -> int | None:
    """The pid of another live holder, or None when the workflow is free (or ours)."""
    if not wdir.lock.is_dir() or is_stale(wdir.lock):
        return None
    pid = holder(wdir.lock)
    if pid == os.getpid():
        return None
    return pid if pid is not None else -1


class WorkflowLock:
    def __init__(self, wdir: WorkflowDir, owner_cwd: str = "") -> None:
        self.wdir = wdir
        self.owner_cwd = owner_cwd
        self.held = False

    def acquire(self) -> None:
        lock = guard(self.wdir).lock
        lock.parent.mkdir(parents=True, exist_ok=True)
        for _attempt in range(2):
            try:
                lock.mkdir(mode=DIR_MODE)
            except FileExistsError:
                if not is_stale(lock):
                    raise LockHeld(self.wdir, holder(lock), self.owner_cwd) from None
                shutil.rmtree(lock, ignore_errors=True)
                continue
            (lock / "pid").write_text(str(os.getpid()), encoding="utf-8")
            self.held = True
            return
        raise LockHeld(self.wdir, holder(lock), self.owner_cwd)

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        if holder(self.wdir.lock) == os.getpid():
            shutil.rmtree(self.wdir.lock, ignore_errors=True)

    def __enter__(self) -> WorkflowLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LockHeld", "WorkflowLock", "held_by_other", "holder", "is_stale"]
