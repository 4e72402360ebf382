"""The one lock type, and the one rule for "is the process a record names still running".

The rule (`owner_alive`): a recorded owner - a pid plus when that process started - is alive
only when the pid is alive, is not a zombie, and its start time matches the recorded one
(within SLACK). A record without a start time (codex-review's `.lock/pid`, the old dispatch
lock) uses when it was written instead: a process that started after that is a reused pid.

The lock (`FileLock`): an exclusive flock on a file that carries a JSON owner record (`pid`,
`started`, plus the caller's fields). flock makes the lock itself immune to pid reuse - the
kernel lets go when the holder dies, however it dies - so the record is only for messages
("... pid N") and for cleaning up after a holder that died (`acquire` returns its record).
The file is opened O_CLOEXEC, so the programs a holder runs never hold it on its behalf.

Light on purpose: stdlib only at import time (psutil only where /proc is missing), because
read-only commands and the release launcher path load this.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.proctree import create_time, pid_alive, zombie

SLACK = 1.0  # seconds between a recorded start time and the process's own
POLL = 0.2  # seconds between looks at a live record nobody flocks (trust_record)
READ_MAX = 65536

Record = dict[str, Any]


# ----------------------------------------------------------------------------- the rule


def started(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch); None when gone or unknown."""
    try:
        return create_time(pid)
    except ImportError:  # no /proc and no psutil
        return None


def owner_alive(pid: int, began: float | None = None, *, written: float | None = None) -> bool:
    """Whether the process a record names still runs: `pid` alive and not a zombie, and the
    same process - started at `began` (within SLACK), or, when the record has no start time,
    started no later than the record was `written`. With neither, the pid alone decides."""
    if pid <= 0 or not pid_alive(pid) or zombie(pid):
        return False
    if began is None and written is None:
        return True
    actual = started(pid)
    if actual is None:
        return pid_alive(pid)  # unknown start time: the pid is all there is
    if began is not None:
        return abs(actual - began) <= SLACK
    return written is not None and actual <= written + SLACK


def me() -> Record:
    """This process as a record's owner."""
    return {"pid": os.getpid(), "started": started(os.getpid())}


def record_alive(record: Record | None, written: float | None = None) -> bool:
    """`owner_alive` for a record (a record without a usable pid names nobody)."""
    pid = _pid_of(record)
    if record is None or pid is None:
        return False
    began = record.get("started")
    if isinstance(began, int | float) and not isinstance(began, bool):
        return owner_alive(pid, float(began))
    return owner_alive(pid, written=written)


def _pid_of(record: Record | None) -> int | None:
    pid = (record or {}).get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


# ----------------------------------------------------------------------------- the lock


class LockBusy(PlanBuildError):
    """Another process holds the lock; `holder` is its record ({} when it wrote none)."""

    def __init__(self, what: str, fix: str, holder: Record, code: ExitCode = ExitCode.BLOCKED):
        super().__init__(what, fix, code=code)
        self.holder = holder


def holder_pid(record: Record | None) -> str:
    """The holder's pid for a message ("?" when the record does not say)."""
    pid = _pid_of(record)
    return str(pid) if pid is not None else "?"


def _default_busy(path: Path) -> Callable[[Record], PlanBuildError]:
    def busy(record: Record) -> PlanBuildError:
        return LockBusy(
            f"{path} is held by another process (pid {holder_pid(record)})",
            "wait for it to finish, then retry",
            record,
        )

    return busy


def parse_record(raw: bytes) -> Record | None:
    """A lock file's record: a JSON object (trailing bytes ignored: a shorter rewrite cut off
    before its truncate), or a bare pid (the format earlier locks wrote); None when empty or
    garbage."""
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return None
    if text.isdigit():
        return {"pid": int(text)}
    try:
        data, _ = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


class FileLock:
    """An flock-held lock file with a JSON owner record.

    `remove`: delete the file on release (else it stays, its record emptied).
    `trust_record`: a record whose owner is alive counts as held even though nobody flocks
    the file - for a lock earlier versions took with O_EXCL and no flock.
    `shared`: a shared flock on an existing file, opened read-only, with no record.
    """

    def __init__(
        self,
        path: Path,
        *,
        mode: int = 0o644,
        remove: bool = False,
        trust_record: bool = False,
        shared: bool = False,
    ) -> None:
        self.path = path
        self.mode = mode
        self.remove = remove
        self.trust_record = trust_record
        self.shared = shared
        self.record: Record = {}
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(
        self,
        *,
        wait: bool = False,
        on_wait: Callable[[Record], None] | None = None,
        busy: Callable[[Record], BaseException] | None = None,
        **fields: Any,
    ) -> Record | None:
        """Take the lock and write our record (`fields` added to pid and start time).

        Without `wait`, a held lock raises `busy(holder's record)`; with it, `on_wait(record)`
        is told once, then this blocks. Returns the record a dead holder left (so the caller
        can clean up after it), or None. OSError from opening the file is the caller's."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this lock")
        import fcntl

        refuse = busy or _default_busy(self.path)
        told = False
        while True:
            fd = self._open()
            try:
                kind = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
                try:
                    fcntl.flock(fd, kind | fcntl.LOCK_NB)
                except BlockingIOError:
                    if not wait:
                        raise refuse(self._read(fd) or {}) from None
                    if on_wait is not None and not told:
                        on_wait(self._read(fd) or {})
                        told = True
                    fcntl.flock(fd, kind)
                if not self._same_file(fd):
                    os.close(fd)  # a holder removed it while we waited: lock the new one
                    continue
                if self.shared:
                    self._fd = fd
                    return None
                previous = self._read(fd)
                if previous is not None and self.trust_record and self._live_other(fd, previous):
                    if not wait:
                        raise refuse(previous)
                    if on_wait is not None and not told:
                        on_wait(previous)
                        told = True
                    os.close(fd)
                    time.sleep(POLL)
                    continue
                dead = previous is not None and not self._live_other(fd, previous)
                self.record = {**me(), **fields}
                self._write(fd, self.record)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return previous if dead and _pid_of(previous) != os.getpid() else None

    def update(self, **fields: Any) -> None:
        """Rewrite the record with `fields` changed, while held (one write, then truncate)."""
        if self._fd is None or self.shared:
            raise RuntimeError(f"{self.path} is not held exclusively by this lock")
        self.record = {**self.record, **fields}
        self._write(self._fd, self.record)

    def release(self) -> None:
        import fcntl

        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self.remove:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
            elif not self.shared:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
        finally:
            # unlock before closing: a child another thread forked a moment ago shares this
            # open file until it execs, and closing alone would leave the lock held through it
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)  # a killed holder's lock goes with its last descriptor

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # ------------------------------------------------------------------------- file

    def _open(self) -> int:
        if self.shared:
            return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, self.mode)

    def _same_file(self, fd: int) -> bool:
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)

    def _live_other(self, fd: int, record: Record | None) -> bool:
        return _pid_of(record) != os.getpid() and record_alive(record, _mtime(fd))

    @staticmethod
    def _read(fd: int) -> Record | None:
        try:
            return parse_record(os.pread(fd, READ_MAX, 0))
        except OSError:
            return None

    @staticmethod
    def _write(fd: int, record: Record) -> None:
        data = json.dumps(record).encode("utf-8")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))


def _mtime(fd: int) -> float | None:
    try:
        return os.fstat(fd).st_mtime
    except OSError:
        return None


__all__ = [
    "SLACK",
    "FileLock",
    "LockBusy",
    "Record",
    "holder_pid",
    "me",
    "owner_alive",
    "parse_record",
    "record_alive",
    "started",
]
