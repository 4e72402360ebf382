"""The releases root: staging, publishing, the atomic `current` switch, history, rollback and
garbage collection, all serialized by an exclusive flock on `<root>/.lock`.

The recipe (docs/reliability-notes §A): build into a uniquely named directory on the same
filesystem, publish it with one rename, never modify a published release, flip `current` with
a temporary symlink and os.replace, fsync files then directories, and let the next run clean
whatever a killed run left behind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import clock, locks
from plan_build.core.fsutil import StateFileError, loads_json
from plan_build.core.ui import Console
from plan_build.release import (
    MANIFEST,
    PYZ,
    check_root,
    checkpoint,
    disk,
    invalid,
    is_release_id,
    manifest,
    unavailable,
)
from plan_build.release.fetch import DOWNLOAD_PREFIX, STAGE_PREFIX

TRASH_PREFIX = ".trash-"
LEFTOVER_PREFIXES = (STAGE_PREFIX, DOWNLOAD_PREFIX, TRASH_PREFIX)
HISTORY_KEEP = 1000


def _now() -> str:
    return clock.stamp()


def _require_posix() -> None:
    if sys.platform == "win32":  # pragma: no cover - documented as unsupported
        raise unavailable(
            "plan-build releases need Linux or macOS (flock, symlinks and atomic rename)",
            "on Windows run plan-build from a checkout or an installed wheel instead",
        )


def os_error(exc: OSError, path: Path, doing: str) -> Exception:
    """A user-facing error for a filesystem failure in the releases root."""
    if exc.errno == errno.EROFS:
        return unavailable(
            f"cannot {doing}: {path} is on a read-only filesystem",
            "set PLAN_BUILD_HOME to a writable local directory",
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return unavailable(
            f"cannot {doing}: permission denied for {path}",
            f"fix the permissions (ls -ld {path}) or set PLAN_BUILD_HOME to a directory you own",
        )
    if exc.errno == errno.ENOSPC:
        return unavailable(f"cannot {doing}: no space left on {path}", "free some space")
    return unavailable(f"cannot {doing}: {exc.strerror or exc} ({path})")


@dataclass(frozen=True)
class ReleaseInfo:
    id: str
    path: Path
    installed: str  # ISO time the release was staged
    size: int
    version: str | None
    current: bool
    bound: tuple[int, ...]  # pids of running invocations bound to it
    last_activated: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "path": str(self.path),
            "installed": self.installed,
            "size": self.size,
            "version": self.version,
            "current": self.current,
            "bound": list(self.bound),
            "last_activated": self.last_activated,
        }


@dataclass
class Store:
    root: Path
    console: Console = field(default_factory=Console)

    @property
    def releases(self) -> Path:
        return self.root / "releases"

    @property
    def current_link(self) -> Path:
        return self.root / "current"

    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    @property
    def bind_lock_path(self) -> Path:
        return self.root / ".bind.lock"

    @property
    def leases(self) -> Path:
        return self.root / "leases"

    @property
    def history_path(self) -> Path:
        return self.root / "activations.log"

    # ------------------------------------------------------------------ layout and locking

    def ensure(self) -> None:
        """Create the root's directories and lock files, or say exactly why that fails."""
        check_root(self.root)
        try:
            for directory in (self.root, self.releases, self.leases):
                directory.mkdir(parents=True, exist_ok=True)
            for lock in (self.lock_path, self.bind_lock_path):
                if not lock.exists():
                    os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            probe = self.root / f".probe-{os.getpid()}"
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            probe.unlink()
        except OSError as exc:
            raise os_error(exc, self.root, "use the releases root") from None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the writers' lock; if another writer holds it, say so and wait."""
        _require_posix()

        def waiting(holder: locks.Record) -> None:
            self.console.say(
                f"waiting for another plan-build release command (pid {locks.holder_pid(holder)})"
                " to finish …"
            )

        lock = locks.FileLock(self.lock_path)
        try:
            lock.acquire(wait=True, on_wait=waiting)
        except OSError as exc:
            raise os_error(exc, self.lock_path, "lock the releases root") from None
        try:
            checkpoint("locked")
            yield
        finally:
            lock.release()  # a killed holder's flock goes with it

    @contextlib.contextmanager
    def bind_locked(self) -> Iterator[None]:
        """Keep out runs that are resolving `current` and taking a lease (they hold it shared:
        the launcher and runrelease.hold)."""
        _require_posix()
        lock = locks.FileLock(self.bind_lock_path)
        lock.acquire(wait=True)
        try:
            yield
        finally:
            lock.release()

    def reap(self) -> list[str]:
        """Remove what killed runs left: staging dirs, downloads, trash, temporary links.

        Only call while holding the writers' lock: nothing else is staging then.
        """
        removed = []
        try:
            entries = list(self.releases.iterdir())
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if entry.name.startswith(LEFTOVER_PREFIXES):
                disk.remove_tree(entry)
                removed.append(entry.name)
        for entry in self.root.glob(".current.*.tmp"):
            entry.unlink(missing_ok=True)
            removed.append(entry.name)
        if removed:
            disk.fsync_dir(self.releases)
        return removed

    # ------------------------------------------------------------------------ inspection

    def current_id(self) -> str | None:
        link = self.current_link
        try:
            target = os.readlink(link)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                raise unavailable(
                    f"{link} is not a symbolic link (a copied install?)",
                    f"move it away (mv {link} {link}.old) and activate a release again",
                ) from None
            raise os_error(exc, link, "read the current release") from None
        name = Path(target).name
        return name if is_release_id(name) else None

    def release_ids(self) -> list[str]:
        try:
            return sorted(p.name for p in self.releases.iterdir() if is_release_id(p.name))
        except FileNotFoundError:
            return []

    def history(self) -> list[dict[str, object]]:
        try:
            lines = self.history_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            with contextlib.suppress(StateFileError):  # a line cut short by a crash
                entry = loads_json(line, self.history_path)
                if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                    entries.append(entry)
        return entries

    def resolve_id(self, given: str) -> str:
        """A release id from a full id or a unique prefix of at least 4 characters."""
        ids = self.release_ids()
        if given in ids:
            return given
        matches = [i for i in ids if len(given) >= 4 and i.startswith(given)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise invalid(
                f"{given} matches several releases: {', '.join(matches)}",
                "give more characters of the id",
            )
        raise invalid(f"no release {given} in {self.releases}", "see plan-build release.list")

    def verify(self, release_id: str) -> manifest.Manifest:
        """Re-hash a published release against its manifest (tampering, corruption)."""
        from plan_build.release.validate import list_files

        path = self.releases / release_id
        where = f"release {release_id}"
        text = (path / MANIFEST).read_text(encoding="utf-8")
        listed = manifest.parse(text, where)
        files = set(list_files(path, where)) - {MANIFEST}
        extra = sorted(files - listed.paths)
        bad = sorted(set(manifest.mismatches(path, listed)) | set(extra))
        if bad or listed.id != release_id:
            raise invalid(
                f"{where} is damaged: {', '.join(bad) or 'its id'} does not match {MANIFEST}",
                "activate a good bundle with the same content again to repair it, "
                "or roll back to another release",
            )
        return listed

    # ---------------------------------------------------------------------- writing

    def publish(self, stage: Path, listed: manifest.Manifest) -> bool:
        """Seal the validated stage and rename it to releases/<id>; False if already there."""
        target = self.releases / listed.id
        disk.seal(stage)
        checkpoint("sealed")
        if target.exists():
            try:
                self.verify(listed.id)
            except Exception:
                self.console.say(f"repairing release {listed.id}: its files did not match")
                trash = self.releases / f"{TRASH_PREFIX}{listed.id}-{os.getpid()}"
                os.rename(target, trash)
                os.rename(stage, target)
                disk.fsync_dir(self.releases)
                disk.remove_tree(trash)
                return True
            disk.remove_tree(stage)
            return False
        os.rename(stage, target)
        checkpoint("renamed")
        disk.fsync_dir(self.releases)
        return True

    def switch(self, release_id: str, *, action: str, source: str | None = None) -> str | None:
        """Point `current` at releases/<id> atomically; returns the previous id.

        Only call while holding the writers' lock.
        """
        previous = self.current_id()
        tmp = self.root / f".current.{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
        os.symlink(f"releases/{release_id}", tmp)
        checkpoint("linked")
        try:
            os.replace(tmp, self.current_link)
        except IsADirectoryError:
            tmp.unlink(missing_ok=True)
            raise unavailable(
                f"{self.current_link} is a directory, not plan-build's link",
                f"move it away (mv {self.current_link} {self.current_link}.old) and rerun",
            ) from None
        checkpoint("switched")
        disk.fsync_dir(self.root)
        self._log(
            {
                "at": _now(),
                "action": action,
                "id": release_id,
                "previous": previous,
                "source": source,
                "pid": os.getpid(),
            }
        )
        checkpoint("logged")
        return previous

    def _log(self, entry: dict[str, object]) -> None:
        line = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(
            self.history_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
        )
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def trim_history(self) -> None:
        from plan_build.core.fsutil import atomic_write

        entries = self.history()
        if len(entries) > HISTORY_KEEP:
            text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries[-HISTORY_KEEP:])
            atomic_write(self.history_path, text)

    # ------------------------------------------------------------------------ listing

    def last_activations(self) -> dict[str, str]:
        last: dict[str, str] = {}
        for entry in self.history():
            last[str(entry["id"])] = str(entry.get("at") or "")
        return last

    def infos(self, bound: dict[str, list[int]]) -> list[ReleaseInfo]:
        from plan_build.release.validate import pyz_version

        current = self.current_id()
        last = self.last_activations()
        # Most recently active first: the log's order, not its timestamps (seconds tie).
        rank = {str(e["id"]): n for n, e in enumerate(self.history())}
        rows = []
        keys: dict[str, tuple[int, int]] = {}
        for release_id in self.release_ids():
            path = self.releases / release_id
            size = 0
            for top, _dirs, files in os.walk(path):
                for name in files:
                    with contextlib.suppress(OSError):
                        size += (Path(top) / name).lstat().st_size
            mtime = path.stat().st_mtime_ns
            keys[release_id] = (rank.get(release_id, -1), mtime)
            rows.append(
                ReleaseInfo(
                    id=release_id,
                    path=path,
                    installed=clock.stamp(clock.from_epoch(mtime / 1e9)),
                    size=size,
                    version=pyz_version(path / PYZ),
                    current=release_id == current,
                    bound=tuple(sorted(bound.get(release_id, []))),
                    last_activated=last.get(release_id),
                )
            )
        rows.sort(key=lambda r: keys[r.id], reverse=True)
        return rows

    def previous_id(self) -> str | None:
        """The most recently active release other than the current one that still exists."""
        current = self.current_id()
        present = set(self.release_ids())
        for entry in reversed(self.history()):
            candidate = str(entry["id"])
            if candidate != current and candidate in present:
                return candidate
        return None

    def trash(self, release_id: str) -> Path:
        """Take a release out of the namespace with one rename; delete the returned path."""
        trash = self.releases / f"{TRASH_PREFIX}{release_id}-{os.getpid()}-{time.monotonic_ns()}"
        os.rename(self.releases / release_id, trash)
        checkpoint("trashed")
        return trash
