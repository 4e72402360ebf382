"""The commit's locking and crash recovery: one commit at a time per repository, and the
pending record that lets the next commit finish (or discard) one cut off between moving HEAD
and updating the index; `tidy` removes what killed runs left once no commit runs.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from plan_build.core import fsutil, locks, snapshot
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery import intended as change_mod
from plan_build.delivery.baseline import Baseline
from plan_build.delivery.intended import Entry


def _busy(record: locks.Record) -> PlanBuildError:
    pid = locks.holder_pid(record)
    return PlanBuildError(
        "another plan-build commit is running in this repository"
        + (f" (pid {pid})" if pid != "?" else ""),
        "wait for it to finish, then run plan-build commit again",
        code=ExitCode.BLOCKED,
    )


@contextlib.contextmanager
def repo_lock(repo: Repo) -> Iterator[None]:
    """One plan-build commit at a time per repository (all worktrees share the lock)."""
    repo.state_dir.mkdir(parents=True, exist_ok=True)
    lock = locks.FileLock(repo.state_dir / "commit.lock")
    lock.acquire(busy=_busy)
    try:
        yield
    finally:
        lock.release()


def pending_path(repo: Repo, session_id: str) -> Path:
    return baseline_mod.sessions_dir(repo) / session_id / "commit-pending.json"


def entries_json(entries: list[tuple[str, Entry | None]]) -> list[list[str | None]]:
    return [[p, e.mode if e else None, e.oid if e else None] for p, e in entries]


def entries_from_json(rows: list[list[str | None]]) -> list[tuple[str, Entry | None]]:
    return [(str(p), Entry(str(m), str(o)) if m and o else None) for p, m, o in rows]


def sync_index(repo: Repo, entries: list[tuple[str, Entry | None]]) -> None:
    change_mod.git_bytes(
        repo, "update-index", "-z", "--index-info", input=change_mod.index_info(entries)
    )


PENDING_FIX = (
    "if `git log -1` is not the session's commit, delete the file and run plan-build commit "
    "again; if it is, delete the file and `git add` the committed files your index still lacks"
)


def read_pending(path: Path) -> dict[str, Any] | None:
    """The record of a commit in flight (None when there is none), checked for its shape."""
    try:
        data = fsutil.read_json(path, PENDING_FIX)
    except FileNotFoundError:
        return None
    oid = re.compile(r"^[0-9a-f]{40,64}$")
    rows = data.get("index") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or not (data.get("old") is None or oid.match(str(data.get("old"))))
        or not oid.match(str(data.get("new")))
        or not isinstance(rows, list)
        or not all(
            isinstance(r, list) and len(r) == 3 and all(x is None or isinstance(x, str) for x in r)
            for r in rows
        )
    ):
        raise fsutil.StateFileError(path, "it is not a pending-commit record", PENDING_FIX)
    return data


def tidy(repo: Repo) -> None:
    """Remove what killed runs left: temp indexes and temp files (by their dead owner) and,
    for sessions already marked committed, the pending record and the session ref that the
    run died before removing. Only while no commit runs (the repository's commit lock is
    free); the user's index and HEAD are never touched here."""
    snapshot.sweep_debris()
    sessions = baseline_mod.sessions_dir(repo)
    if not sessions.is_dir():
        return
    held = contextlib.ExitStack()
    try:
        held.enter_context(repo_lock(repo))
    except (PlanBuildError, OSError):
        return  # a live commit owns these files right now (or the state dir is read-only)
    with held:
        for folder in sessions.iterdir():
            if folder.is_dir():
                fsutil.sweep(folder)
        listed = repo.git(
            "for-each-ref", "--format=%(refname) %(objectname)", baseline_mod.REF_PREFIX
        ).stdout.split("\n")
        pins = dict(line.split(" ", 1) for line in listed if " " in line)
        for base in baseline_mod.all_baselines(repo):
            if not base.committed:
                continue  # an unfinished commit is recover()'s, in the next commit
            pending_path(repo, base.id).unlink(missing_ok=True)
            if pins.get(base.ref) == base.pin:
                repo.git("update-ref", "-d", base.ref, base.pin, check=False)


def recover(repo: Repo, base: Baseline) -> Baseline | None:
    """Finish or discard a commit that was cut off between update-ref and the index update."""
    path = pending_path(repo, base.id)
    data = read_pending(path)
    if data is None:
        return None
    head = repo.head()
    if head == data["new"]:
        sync_index(repo, entries_from_json(data["index"]))
        done = baseline_mod.mark_committed(repo, base, data["new"])
        path.unlink()
        return done
    if head == data["old"]:
        path.unlink()  # the commit never landed
    return None


__all__ = [
    "PENDING_FIX",
    "entries_from_json",
    "entries_json",
    "pending_path",
    "read_pending",
    "recover",
    "repo_lock",
    "sync_index",
    "tidy",
]
