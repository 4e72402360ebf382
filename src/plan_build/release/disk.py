"""Small durable-filesystem helpers for the releases root: synced writes, directory fsync,
read-only sealing and removal of read-only trees."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from plan_build.core.fsutil import fsync_dir

__all__ = ["fsync_dir", "make_writable", "remove_tree", "seal", "write_synced"]


def write_synced(target: Path, chunks: Iterable[bytes], *, mode: int = 0o644) -> int:
    """Create `target` (it must not exist), write `chunks`, fsync it; return the byte count."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    written = 0
    with os.fdopen(fd, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
            written += len(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    return written


def seal(top: Path) -> None:
    """Make a staged tree read-only (files 0444, dirs 0555) and fsync every directory.

    Files were fsynced as they were written; the directories are synced bottom-up so the
    whole tree is on disk before it is renamed into place.
    """
    for current, dirs, files in os.walk(top, topdown=False):
        here = Path(current)
        for name in files:
            (here / name).chmod(0o444)
        for name in dirs:
            (here / name).chmod(0o555)
        fsync_dir(here)
    top.chmod(0o555)


def make_writable(top: Path) -> None:
    for current, dirs, _files in os.walk(top):
        for name in dirs:
            path = Path(current) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IRWXU)
    if not top.is_symlink():
        top.chmod(top.stat().st_mode | stat.S_IRWXU)


def remove_tree(top: Path) -> None:
    """Remove a (possibly read-only) tree; a missing tree is fine."""
    if not top.exists() and not top.is_symlink():
        return
    if top.is_symlink() or top.is_file():
        top.unlink()
        return
    make_writable(top)
    shutil.rmtree(top)
