"""Atomic file replacement: temp file in the same directory, fsync, rename, fsync the directory.

A crash or Ctrl-C leaves either the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _within(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def confine(path: Path, root: Path, *, forbid: Path | None = None) -> Path:
    """`path`, once no part of it between `root` and its end is a symbolic link leading out of
    `root` (or into `forbid`, the repository's .git); else refuse, naming the link.

    A repository's content (a committed `.claude -> /elsewhere`) must never steer where
    plan-build writes or which other project's files it reads. Links that stay inside are
    followed. Raises PlanBuildError (exit 6) before anything is written.
    """
    from plan_build.errors import ExitCode, PlanBuildError

    top = root.resolve()
    banned = forbid.resolve() if forbid is not None else None
    absolute = path if path.is_absolute() else root / path
    try:
        parts = absolute.relative_to(root).parts
    except ValueError:
        try:
            parts = absolute.resolve().relative_to(top).parts
        except ValueError:
            parts = ()
        if not parts and absolute.resolve() != top:
            raise PlanBuildError(
                f"{path} is outside {root}; plan-build writes only inside it",
                "run plan-build from inside the repository it acts on",
                code=ExitCode.BLOCKED,
            ) from None
        absolute = top.joinpath(*parts)
        root = top
    current = root
    for part in parts:
        current = current / part
        if not current.is_symlink():
            continue
        target = current.resolve()
        if not _within(target, top):
            where = "outside the repository"
        elif banned is not None and _within(target, banned):
            where = "into the repository's .git"
        else:
            continue
        raise PlanBuildError(
            f"{current} is a symbolic link to {target}, {where}; plan-build does not write "
            "or read through it",
            f"remove the link (or replace it with a real directory): rm {current}",
            code=ExitCode.BLOCKED,
        )
    return absolute
