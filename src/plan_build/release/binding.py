"""Binding: each run uses exactly one release, resolved once at start.

The lease itself (and which release this run comes from) lives in the core leaf
`plan_build.core.runrelease`, because `resources` and `context` need it before any feature loads;
this module adds what only the release commands need: listing and reaping leases for `gc`.
Launchers and zipapps start a release through the entry module's `run_release` (ADR 0160).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from plan_build.core.fsutil import StateFileError, loads_json


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
