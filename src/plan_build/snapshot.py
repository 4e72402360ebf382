"""Snapshots of a work tree as git tree objects, without touching the user's index or files.

A temporary index (GIT_INDEX_FILE) seeded from a copy of the real one takes `git add -A`, so
the tree includes untracked files that are not ignored. The user's index and work tree stay
byte-identical; GIT_OPTIONAL_LOCKS=0 keeps git from refreshing the real index. Seeding from
the real index is only a speed-up (its stat data lets git skip unchanged files); the tree
written from it never depends on what the seed contained.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_build.errors import ExitCode, PlanBuildError
from plan_build.gitrepo import Repo, git_env
from plan_build.proc import CommandFailed

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# plan-build's own state inside the work tree: review rounds write here, so it is never part of
# a snapshot (a review would otherwise make itself stale, and a commit would carry it).
TOOL_STATE: tuple[str, ...] = (".claude/codex-review",)


def index_file(repo: Repo) -> Path:
    """The user's index of this work tree (linked worktrees have their own)."""
    return repo.git_dir / "index"


@contextmanager
def temp_index(
    repo: Repo, seed: Literal["user", "empty"] | str = "user"
) -> Iterator[dict[str, str]]:
    """An environment whose GIT_INDEX_FILE is a private index, removed afterwards.

    `seed` is "user" (a copy of the user's index), "empty", or a tree-ish to read into it.
    """
    with tempfile.TemporaryDirectory(prefix="plan-build-index-") as tmp:
        index = Path(tmp) / "index"
        env = git_env()
        env["GIT_INDEX_FILE"] = str(index)
        if seed == "user":
            real = index_file(repo)
            if real.exists():
                # copy2 keeps the index's mtime: git compares it with each entry's mtime to
                # re-check "racily clean" files, and a fresh mtime would hide such edits.
                shutil.copy2(real, index)
        elif seed != "empty":
            repo.git("read-tree", seed, env=env)
        yield env


def _may_hold(index: Path, paths: Sequence[str]) -> bool:
    """False only when the index certainly has no entry at or under any of `paths`: a version
    2/3 index spells every path out in full (version 4 compresses them, a split index keeps its
    entries elsewhere and a sparse one folds directories into one entry, so those always answer
    True). Saves a `git rm` on each snapshot."""
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        return True
    if b"link" in data or b"sdir" in data:  # split or sparse index (or such bytes by chance)
        return True
    return any(os.fsencode(p) in data for p in paths)


def _add_all(repo: Repo, env: dict[str, str], exclude: Sequence[str] = TOOL_STATE) -> None:
    """Stage the whole work tree into the private index, leaving `exclude` (paths relative to
    the repository root) out entirely, even where HEAD tracks them."""
    skip = [f":(exclude,literal){p}" for p in exclude]
    try:
        # fsmonitor answers for the user's index; a private one is checked by stat alone.
        repo.git("-c", "core.fsmonitor=false", "add", "-A", "--", ".", *skip, env=env, timeout=600)
        # `add` never adds an excluded path, so only entries the seed brought can be there
        if exclude and _may_hold(Path(env["GIT_INDEX_FILE"]), exclude):
            literal = [f":(literal){p}" for p in exclude]
            repo.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *literal, env=env)
    except CommandFailed as exc:
        raise PlanBuildError(
            f"cannot snapshot the work tree: {exc.what}",
            "make every file in the work tree readable (or ignore it in .gitignore), then retry",
            code=ExitCode.BLOCKED,
        ) from exc


@dataclass(frozen=True)
class Snapshot:
    staged_tree: str  # the user's index as a tree
    worktree_tree: str  # the whole work tree: tracked and untracked, not ignored


def capture(repo: Repo, *, exclude: Sequence[str] = TOOL_STATE) -> Snapshot:
    """The staged tree and the whole work-tree tree, both from one copy of the user's index."""
    with temp_index(repo, "user") as env:
        staged = repo.git("write-tree", env=env).stdout.strip()  # no index: the empty tree
        _add_all(repo, env, exclude)
        full = repo.git("write-tree", env=env).stdout.strip()
    return Snapshot(staged_tree=staged, worktree_tree=full)


def worktree_tree(repo: Repo, *, exclude: Sequence[str] = TOOL_STATE) -> str:
    """The tree id of the whole work tree as it is now (tracked and untracked, not ignored),
    without plan-build's own state (`exclude`)."""
    with temp_index(repo, "user") as env:
        _add_all(repo, env, exclude)
        return repo.git("write-tree", env=env).stdout.strip()


class Rescan:
    """Snapshots of one work tree taken again and again through one kept private index.

    After the first snapshot the private index holds fresh stat data for every file, so a
    later `git add -A` hashes only files that changed since: the second snapshot costs about
    what `git status` does, and is exact in the same way (git re-reads "racily clean" files;
    the index file keeps the mtime git compares them with). If the user's index changed in
    between (a `git add`, `git rm --cached`: what is tracked decides what an ignored file
    does), or .git/info/exclude did, the next snapshot starts again from a fresh copy of it.
    (A .gitignore is part of the tree, so editing one is itself a change.)
    """

    def __init__(self, repo: Repo, exclude: Sequence[str] = TOOL_STATE) -> None:
        self.repo = repo
        self.exclude = tuple(exclude)
        self._tmp = tempfile.TemporaryDirectory(prefix="plan-build-index-")
        self._index = Path(self._tmp.name) / "index"
        self._seed: tuple[tuple[int, int, int, int], ...] | None = None

    def __enter__(self) -> Rescan:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def _seed_stat(self) -> tuple[tuple[int, int, int, int], ...]:
        """The user's index and the repository's exclude file, by stat: if either changed,
        what is tracked or ignored may have, so the next snapshot starts afresh."""
        out = []
        for path in (index_file(self.repo), self.repo.common_dir / "info" / "exclude"):
            try:
                st = path.stat()
            except OSError:
                out.append((0, 0, 0, 0))
                continue
            out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return tuple(out)

    def tree(self) -> str:
        """The tree id of the whole work tree as it is now (as `worktree_tree`)."""
        seed = self._seed_stat()
        if seed != self._seed or not self._index.exists():
            self._index.unlink(missing_ok=True)
            if index_file(self.repo).exists():
                shutil.copy2(index_file(self.repo), self._index)  # mtime kept: see temp_index
            self._seed = seed
        env = git_env()
        env["GIT_INDEX_FILE"] = str(self._index)
        _add_all(self.repo, env, self.exclude)
        return self.repo.git("write-tree", env=env).stdout.strip()


def index_tree(repo: Repo) -> str:
    """The tree id of the user's staged state (read-only: the real index is copied first)."""
    if not index_file(repo).exists():
        return EMPTY_TREE
    with temp_index(repo, "user") as env:
        return repo.git("write-tree", env=env).stdout.strip()


def changed_paths(repo: Repo, old_tree: str, new_tree: str) -> list[str]:
    """Paths that differ between two trees (renames reported as delete + add)."""
    out = repo.git("diff-tree", "-r", "--no-renames", "--name-only", "-z", old_tree, new_tree)
    return [p for p in out.stdout.split("\0") if p]


__all__ = [
    "EMPTY_TREE",
    "TOOL_STATE",
    "Rescan",
    "Snapshot",
    "capture",
    "changed_paths",
    "index_file",
    "index_tree",
    "temp_index",
    "worktree_tree",
]
