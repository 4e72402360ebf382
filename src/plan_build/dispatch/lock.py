"""One dispatch at a time per repository: `<state>/dispatch/lock` (all worktrees share it).

Built on the core lock (plan_build.core.locks): an flock on the file, whose JSON record names the
dispatch (`pid`, `started`, `task`, `at`) and the process group it runs now (`group`: pgid and
the leader's start time, set by `record_group`). A dispatch that died leaves its record; the
next one stops what survives of that group before it starts (a Codex that outlived its
dispatch must not keep editing). Earlier versions took the lock by creating the file
(O_EXCL, no flock), so a record whose owner still runs counts as held too.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from plan_build.core import clock, locks, proc, proctree
from plan_build.core.errors import PlanBuildError, usage


def _busy(record: locks.Record) -> PlanBuildError:
    return usage(
        f"another dispatch is running ({record.get('task')}, pid {locks.holder_pid(record)})",
        "wait for it to finish; one task runs at a time",
    )


def _stop_survivors(record: locks.Record) -> list[int]:
    try:
        group = record.get("group") or {}
        pgid, started = int(group["pgid"]), float(group["started"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    return proc.stop_survivors(pgid, started)


class DispatchLock:
    def __init__(self, path: Path, task_id: str) -> None:
        self.path = path
        self.task_id = task_id
        self._lock = locks.FileLock(path, mode=0o600, remove=True, trust_record=True)

    @property
    def held(self) -> bool:
        return self._lock.held

    def acquire(self) -> list[int]:
        """Take the lock; a dead holder's recorded process group is stopped first. Returns
        the pids stopped."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        previous = self._lock.acquire(busy=_busy, task=self.task_id, at=clock.stamp())
        return _stop_survivors(previous) if previous else []

    def record_group(self, pgid: int) -> None:
        """Note the process group now running (Codex or a check), for a later takeover."""
        started = proctree.create_time(pgid)
        if not self.held or started is None:
            return
        group: dict[str, Any] = {"pgid": pgid, "started": started}
        with contextlib.suppress(OSError):
            self._lock.update(at=clock.stamp(), group=group)

    def release(self) -> None:
        self._lock.release()


__all__ = ["DispatchLock"]
