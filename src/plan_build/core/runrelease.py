"""The release this run comes from: its id, the bundle it was imported from, and its lease.

A leaf of the core layer (stdlib and `sessionvars` only): `resources`, `context` and the entry
module need these facts before anything else loads, and the `release` feature package builds on
them, so they cannot live in that package without tying the core to a feature (docs/adr/0110).

A run that starts from a release (the launcher, or a zipapp inside `releases/<id>/`) holds a
lease for it: `<root>/leases/<pid>-<random>.lease`, flock-held for as long as the process (or
the program it execs, such as Claude Code) lives. The lease is taken while holding
`<root>/.bind.lock` shared, so `gc` (which decides under the same lock held exclusively)
cannot collect a release between "resolved" and "leased". Children get `PLAN_BUILD_RELEASE`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from plan_build.core.sessionvars import RELEASE

log = logging.getLogger("plan_build.release")

ENV = RELEASE
MANIFEST = "MANIFEST.sha256"
ID_LENGTH = 16
ID_RE = re.compile(r"[0-9a-f]{16}")


def is_release_id(name: str) -> bool:
    return ID_RE.fullmatch(name) is not None


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
    try:
        text = (path / MANIFEST).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return path.name
    import hashlib  # OpenSSL costs every command ~2 ms at startup; only this digest needs it

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


def running_bundle(package_dir: Path) -> Path | None:
    """The bundle directory when plan_build is imported from a bundle's zipapp."""
    archive = package_dir.parent
    if archive.is_file() and (archive.parent / MANIFEST).is_file():
        return archive.parent
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


def bind(pyz: str, bind_lock: int | None = None) -> None:
    """Bind this run to the release whose zipapp is `pyz`, then let go of the launcher's
    shared bind lock (the lease now protects the release)."""
    release = Path(pyz).parent
    if (release / MANIFEST).is_file():
        os.environ[ENV] = str(release)
        hold(release)
    if bind_lock is not None:
        with contextlib.suppress(OSError):
            os.close(bind_lock)
