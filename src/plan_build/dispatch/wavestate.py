"""A wave's record and lock, one per user work tree: `<state>/dispatch/waves/<key>.json`.

The record names the wave, and for each of its tasks the worktree it runs in, how far it got
(`running`, `verified`, `applied`, `conflict`, `blocked`, `interrupted`, `refused`) and the
process group it runs (so a wave that takes over after a SIGKILL stops any survivor first).
A wave that stopped part-way leaves it behind: the next `dispatch --wave` in that work tree
resumes the unfinished tasks only, and `status` names the worktrees kept (also those of
earlier waves, under `kept`, until they are removed). The lock (`<key>.lock`) is per work
tree, so two waves in two worktrees of one repository run side by side.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from plan_build.core import clock, locks, proc, proctree
from plan_build.core.errors import usage
from plan_build.core.fsutil import StateFileError, read_json, write_json
from plan_build.core.gitrepo import Repo

# `verified`: the task passed, and the wave stopped before its result was applied
UNFINISHED = ("running", "interrupted", "verified")
# `ignored_kept`: applied, but in-scope edits of ignored files could not be brought back
KEPT = ("conflict", "blocked", "interrupted", "running", "verified", "ignored_kept")


def key(repo: Repo) -> str:
    """The work tree's name among the repository's: `main`, or `wt-NAME` for a linked one."""
    if repo.git_dir.resolve() == repo.common_dir.resolve():
        return "main"
    return f"wt-{repo.git_dir.name}"


def folder(repo: Repo) -> Path:
    return repo.state_dir / "dispatch" / "waves"


def record_path(repo: Repo) -> Path:
    return folder(repo) / f"{key(repo)}.json"


def read(repo: Repo) -> dict[str, Any]:
    """The work tree's wave record ({} when none is left)."""
    where = record_path(repo)
    try:
        data = read_json(
            where, "delete it to forget the wave (its worktrees stay; see git worktree list)"
        )
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), dict):
        raise StateFileError(where, "it is not a wave record", "delete it, then run the wave again")
    return data


def unfinished(record: dict[str, Any]) -> list[str]:
    tasks = record.get("tasks") or {}
    return [t for t, v in tasks.items() if isinstance(v, dict) and v.get("state") in UNFINISHED]


def kept(repo: Repo) -> list[tuple[str, str, str]]:
    """(task, state, worktree path) of every worktree a wave in any work tree of the
    repository left behind, for `status`."""
    out: list[tuple[str, str, str]] = []
    for path in sorted(folder(repo).glob("*.json")):
        try:
            data = read_json(path, "")
        except (OSError, StateFileError, FileNotFoundError):
            continue
        if not isinstance(data, dict):
            continue
        entries = [*_entries(data.get("kept")), *_entries(data.get("tasks"))]
        for tid, v in entries:
            if not isinstance(v, dict) or v.get("state") not in KEPT:
                continue
            wt = str(v.get("worktree") or "")
            if wt and Path(wt).exists():
                out.append((str(tid), str(v.get("state")), wt))
    return out


def _entries(value: object) -> list[tuple[str, Any]]:
    return list(value.items()) if isinstance(value, dict) else []


def _still_kept(tasks: object) -> dict[str, Any]:
    """The entries of a record's tasks whose worktree is kept and still there."""
    return {
        t: v
        for t, v in _entries(tasks)
        if isinstance(v, dict)
        and v.get("state") in KEPT
        and v.get("worktree")
        and Path(str(v["worktree"])).exists()
    }


def _busy(record: locks.Record) -> BaseException:
    return usage(
        f"a wave is already running in this work tree (pid {locks.holder_pid(record)})",
        "wait for it to finish; a wave in another worktree of the repository may run beside it",
    )


class WaveState:
    """The record of the running wave, written atomically on every change (threads share it)."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.path = record_path(repo)
        self.data: dict[str, Any] = {}
        self._mutex = threading.Lock()
        self._lock = locks.FileLock(folder(repo) / f"{key(repo)}.lock", mode=0o600)

    def acquire(self) -> list[int]:
        """Take the work tree's wave lock; a dead wave's recorded groups are stopped first.
        Returns the pids stopped."""
        folder(self.repo).mkdir(parents=True, exist_ok=True)
        self._lock.acquire(busy=_busy, at=clock.stamp())
        self.data = read(self.repo)
        stopped: list[int] = []
        for v in (self.data.get("tasks") or {}).values():
            for g in (v.get("groups") or []) if isinstance(v, dict) else []:
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    stopped += proc.stop_survivors(int(g["pgid"]), float(g["started"]))
        return stopped

    def release(self) -> None:
        self._lock.release()

    def begin(self, wave_id: str, resumed: bool) -> None:
        with self._mutex:
            if not resumed:  # earlier waves' kept worktrees stay listed until they are removed
                kept = {**_still_kept(self.data.get("kept")), **_still_kept(self.data.get("tasks"))}
                self.data = {"wave": wave_id, "started": clock.stamp(), "tasks": {}, "kept": kept}
            self.data["pid"] = os.getpid()
            self._write()

    @property
    def wave_id(self) -> str:
        return str(self.data.get("wave") or "")

    def task(self, task_id: str) -> dict[str, Any]:
        value = (self.data.get("tasks") or {}).get(task_id)
        return dict(value) if isinstance(value, dict) else {}

    def set(self, task_id: str, **fields: Any) -> None:
        with self._mutex:
            tasks = self.data.setdefault("tasks", {})
            tasks[task_id] = {**(tasks.get(task_id) or {}), **fields, "at": clock.stamp()}
            self._write()

    def group(self, task_id: str, pgid: int) -> None:
        """Note a process group the task runs now (only the latest is kept)."""
        started = proctree.create_time(pgid)
        if started is not None:
            self.set(task_id, groups=[{"pgid": pgid, "started": started}])

    def finish(self) -> None:
        """Forget the record when nothing is left to resume or to look at."""
        with self._mutex:
            left = {**_still_kept(self.data.get("kept")), **_still_kept(self.data.get("tasks"))}
            if not left:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
            else:
                self._write()

    def _write(self) -> None:
        write_json(self.path, self.data, sort_keys=True)


__all__ = ["KEPT", "UNFINISHED", "WaveState", "kept", "key", "read", "record_path", "unfinished"]
