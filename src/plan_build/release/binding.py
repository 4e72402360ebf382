"""Binding: each run uses exactly one release, resolved once at start.

A run that starts from a release (the launcher, or a zipapp inside `releases/<id>/`) holds a
lease for it: `<root>/leases/<pid>-<random>.lease`, flock-held for as long as the process (or
the program it execs, such as Claude Code) lives. The lease is taken while holding
`<root>/.bind.lock` shared, and `gc` decides under the same lock held exclusively, so a release
cannot be collected between "resolved" and "leased". A killed process releases its flock; its
file is then stale and the next `gc` removes it. Children get `PLAN_BUILD_RELEASE`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from plan_build.fsutil import StateFileError, loads_json
from plan_build.release import MANIFEST, is_release_id

log = logging.getLogger("plan_build.release")

ENV = "PLAN_BUILD_RELEASE"


@dataclass
class Lease:
    path: Path
    fd: int
    release: Path

    def release_now(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)


_held: dict[Path, Lease] = {}


def root_of(release: Path) -> Path | None:
    """The releases root that `release` belongs to, if it is a published release."""
    if release.parent.name == "releases" and is_release_id(release.name):
        return release.parent.parent
    return None


def release_id_of(path: Path) -> str:
    """A release's id: its directory name, or (for a bundle elsewhere) its manifest digest."""
    if is_release_id(path.name):
        return path.name
    from plan_build.release.manifest import digest_of

    try:
        return digest_of((path / MANIFEST).read_text(encoding="utf-8"))[:16]
    except (OSError, UnicodeDecodeError):
        return path.name


def running_bundle(package_dir: Path) -> Path | None:
    """The bundle directory when plan_build is imported from a bundle's zipapp."""
    archive = package_dir.parent
    if archive.is_file() and (archive.parent / MANIFEST).is_file():
        return archive.parent
    return None


def resolve_current(root: Path) -> Path | None:
    """`<root>/current` resolved once to the absolute release directory (None if unset)."""
    link = root / "current"
    try:
        return Path(os.path.realpath(link, strict=True))
    except OSError:
        return None


def hold(release: Path) -> Lease | None:
    """Lease `release` for this process (idempotent, best effort).

    Without a writable releases root (a shared read-only install) nothing is recorded, and the
    release is protected only by being current.
    """
    release = Path(os.path.realpath(release))
    if release in _held:
        return _held[release]
    root = root_of(release)
    if root is None or sys.platform == "win32":
        return None
    import fcntl

    guard: int | None = None
    try:
        guard = os.open(root / ".bind.lock", os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(guard, fcntl.LOCK_SH)
    except OSError:
        if guard is not None:
            os.close(guard)
        guard = None
    try:
        if not (release / MANIFEST).is_file():
            return None  # collected before we got here: using it fails loudly later
        path = root / "leases" / f"{os.getpid()}-{os.urandom(4).hex()}.lease"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        info = {"pid": os.getpid(), "release": release.name, "started": time.time()}
        os.write(fd, json.dumps(info).encode("utf-8"))
        os.set_inheritable(fd, True)  # kept across exec (Claude Code); Popen children close it
    except OSError as exc:
        log.debug("no lease for %s: %s", release, exc)
        return None
    finally:
        if guard is not None:
            os.close(guard)
    lease = Lease(path, fd, release)
    _held[release] = lease
    atexit.register(lease.release_now)
    return lease


def leases(root: Path, *, reap: bool = False) -> dict[str, list[int]]:
    """Release id → pids of live leases. With `reap`, delete stale lease files (call only
    while holding `.bind.lock` exclusively, so no lease is being created meanwhile)."""
    if sys.platform == "win32":  # pragma: no cover
        return {}
    import fcntl

    live: dict[str, list[int]] = {}
    try:
        entries = sorted((root / "leases").glob("*.lease"))
    except OSError:
        return live
    for path in entries:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raw = os.pread(fd, 4096, 0)
                with contextlib.suppress(ValueError, TypeError, KeyError, StateFileError):
                    info = loads_json(raw.decode("utf-8"), path)
                    live.setdefault(str(info["release"]), []).append(int(info["pid"]))
                continue
            if reap:  # nobody holds it: its process is gone
                with contextlib.suppress(OSError):
                    path.unlink()
        finally:
            os.close(fd)
    return live


def run_release(pyz: str, bind_lock: int | None = None) -> None:
    """Entry point of a bundle's zipapp (and of the installed launcher): bind, then run."""
    release = Path(pyz).parent
    if (release / MANIFEST).is_file():
        os.environ[ENV] = str(release)
        hold(release)
    if bind_lock is not None:
        with contextlib.suppress(OSError):
            os.close(bind_lock)
    from plan_build.main import main

    main()
