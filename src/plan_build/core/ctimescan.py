"""The paths under some directories whose ctime moved since a moment: the "after" side of the
ignored-path snapshot (snapshot.changed_ignored), where a 50,000-file node_modules must not be
hashed twice.

GNU find answers in one call (`-newerct @<s.ns> -printf`); BSD find (macOS) has neither
primary, so the same answer comes from a walk in Python, chosen by probing the find on PATH
once. Both report find's %y type letters from lstat, never follow a symlink, include each
directory asked about, and compare ctimes strictly; tests/test_snapshot_walk.py proves they agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from plan_build.core import proc
from plan_build.core.errors import PlanBuildError

# How `changed_since` lists the paths whose ctime moved: "find" asks GNU find once (fast on a
# 50,000-file node_modules), "walk" is the portable walk in Python (BSD find on macOS has neither
# -newerct nor -printf), "auto" probes the find on PATH once and uses it where it can.
Finder = Literal["auto", "find", "walk"]
_find_works: dict[str, bool] = {}  # resolved find executable -> it takes -newerct and -printf


def gnu_find(env: Mapping[str, str] | None) -> str | None:
    """The find on PATH if it understands `-newerct @<seconds>` and `-printf` (asked once per
    executable: BSD find refuses both as unknown primaries), else None."""
    path = proc.which("find", env)
    if path is None:
        return None
    if path not in _find_works:
        try:
            done = proc.run(
                [path, ".", "-maxdepth", "0", "-newerct", "@0", "-printf", ""],
                cwd="/",
                env=env,
                timeout=30,
            )
            _find_works[path] = done.ok and not done.stdout
        except (proc.CommandNotFound, proc.CommandTimeout, PlanBuildError):
            _find_works[path] = False
    return path if _find_works[path] else None


def changed_since(
    root: Path,
    dirs: Sequence[str],
    since_ns: int,
    env: Mapping[str, str] | None = None,
    finder: Finder = "auto",
) -> list[tuple[str, str]]:
    """(type, path) of everything under `dirs`, the directories themselves included, whose
    ctime is after `since_ns`: one GNU `find`, or the portable walk with the same answer (type
    letters as find's %y, from lstat; symlinks never followed). A find that fails part-way
    (a directory vanished or became unreadable) also hands over to the walk."""
    find = "find" if finder == "find" else gnu_find(env) if finder == "auto" else None
    if find is not None:
        stamp = f"@{since_ns // 1_000_000_000}.{since_ns % 1_000_000_000:09d}"
        try:
            done = proc.run_bytes(
                [find, *(f"./{d}" for d in dirs), "-newerct", stamp, "-printf", "%y %p\\0"],
                cwd=root,
                env=env,
                timeout=600,
            )
            if done.ok or finder == "find":
                return [
                    (chr(e[0]), os.fsdecode(e[2:]).removeprefix("./"))
                    for e in done.stdout.split(b"\0")
                    if len(e) > 2
                ]
        except (proc.CommandNotFound, proc.CommandTimeout):
            if finder == "find":
                raise
    return walk(root, dirs, since_ns)


def _kind(mode: int) -> str:
    """find's %y letter for a file mode."""
    import stat

    for test, letter in (
        (stat.S_ISREG, "f"),
        (stat.S_ISDIR, "d"),
        (stat.S_ISLNK, "l"),
        (stat.S_ISFIFO, "p"),
        (stat.S_ISSOCK, "s"),
        (stat.S_ISCHR, "c"),
        (stat.S_ISBLK, "b"),
    ):
        if test(mode):
            return letter
    return "U"


def walk(
    root: Path, dirs: Sequence[str], since_ns: int, prune: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """The portable half of `changed_since` and `changed_in_tree`: lstat every path under
    `dirs` (each top too; "." is the tree), descend only into real directories and not into
    `prune`, skip what cannot be read, as find does."""
    import stat

    found: list[tuple[str, str]] = []
    pending = list(reversed(dirs))
    while pending:
        rel = pending.pop()
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue
        if st.st_ctime_ns > since_ns:
            found.append((_kind(st.st_mode), rel))
        if stat.S_ISDIR(st.st_mode):
            try:
                names = sorted(os.listdir(root / rel), reverse=True)
            except OSError:
                continue
            children = (name if rel == "." else f"{rel}/{name}" for name in names)
            pending.extend(child for child in children if child not in prune)
    return found


def changed_in_tree(
    root: Path,
    since_ns: int,
    prune: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    finder: Finder = "auto",
) -> list[tuple[str, str]]:
    """(type, path) of everything in the work tree at `root` whose ctime is after `since_ns`,
    the top itself as "." and nothing at or under a `prune` path (.git, wholly ignored
    directories): the checkpoints' "did anything change" question (core/checkpoint.py). One
    GNU `find` with `-prune`, or the same walk in Python."""
    find = "find" if finder == "find" else gnu_find(env) if finder == "auto" else None
    if find is not None:
        stamp = f"@{since_ns // 1_000_000_000}.{since_ns % 1_000_000_000:09d}"
        skip: list[str] = []
        for path in prune:
            skip += [*(["-o"] if skip else []), "-path", "./" + _glob_escape(path)]
        pruning = ["(", *skip, ")", "-prune", "-o"] if skip else []
        try:
            done = proc.run_bytes(
                [find, ".", *pruning, "-newerct", stamp, "-printf", "%y %P\\0"],
                cwd=root,
                env=env,
                timeout=600,
            )
            if done.ok or finder == "find":
                return [
                    (chr(e[0]), os.fsdecode(e[2:]) or ".")
                    for e in done.stdout.split(b"\0")
                    if len(e) > 1
                ]
        except (proc.CommandNotFound, proc.CommandTimeout):
            if finder == "find":
                raise
    return walk(root, ["."], since_ns, frozenset(prune))


def _glob_escape(path: str) -> str:
    return "".join("\\" + ch if ch in "[]*?\\" else ch for ch in path)


__all__ = ["Finder", "changed_in_tree", "changed_since", "gnu_find", "walk"]
