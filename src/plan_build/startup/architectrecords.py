"""Architect records and the archive that `architect --new` makes before launch.

plan-build archives mechanically (the seed left this to Claude): the active records move into
`docs/archive/<UTC stamp>/` — copied, fsynced, then removed — and a failure leaves every
record where it was, so the launch is aborted with nothing lost.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_build.core import clock
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import confine, fsync_dir

RECORDS = ("SPEC.md", "TASKS.md", "ADR.md", "CHANGELOG.md")
StartMode = Literal["resume", "archive-and-start-new"]


@dataclass(frozen=True)
class Archive:
    directory: Path
    moved: tuple[str, ...]


def present(root: Path) -> list[str]:
    return [name for name in RECORDS if (root / name).is_file()]


def stamp(now: dt.datetime | None = None) -> str:
    return clock.compact(now)


def archive(root: Path, *, now: dt.datetime | None = None, dry_run: bool = False) -> Archive:
    """Move the active records into a new `docs/archive/<stamp>/`; never overwrite an archive."""
    names = present(root)
    base = confine(root / "docs" / "archive", root, forbid=root / ".git")
    for record in names:  # a record linked to a file elsewhere is not this repository's
        confine(root / record, root, forbid=root / ".git")
    name = stamp(now)
    target = base / name
    n = 1
    while target.exists():
        n += 1
        target = base / f"{name}-{n}"
    confine(target, root, forbid=root / ".git")
    if dry_run or not names:
        return Archive(target, tuple(names))
    try:
        base.mkdir(parents=True, exist_ok=True)
        target.mkdir()  # fails if a concurrent run took the name: never overwrite
        for record in names:
            dest = target / record
            shutil.copy2(root / record, dest)
            with dest.open("rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(target)
        fsync_dir(base)
    except OSError as exc:
        with contextlib.suppress(OSError):
            shutil.rmtree(target)
        raise PlanBuildError(
            f"archiving the records into {target.relative_to(root)} failed ({exc}); "
            "nothing was moved and Claude was not launched",
            "fix the problem (disk space, permissions on docs/) and rerun architect --new",
            code=ExitCode.BLOCKED,
        ) from exc
    for record in names:
        (root / record).unlink()
    fsync_dir(root)
    return Archive(target, tuple(names))
