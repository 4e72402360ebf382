"""Snapshots of a work tree as git tree objects, without touching the user's index or files.

A temporary index (GIT_INDEX_FILE) seeded from the real one takes `git add -A`, so the tree
includes untracked files that are not ignored. The user's index and work tree stay
byte-identical; GIT_OPTIONAL_LOCKS=0 keeps git from refreshing the real index.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from plan_build.gitrepo import Repo, git_env

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def worktree_tree(repo: Repo, *, exclude: Sequence[str] = ()) -> str:
    """The tree id of the whole work tree as it is now (tracked and untracked, not ignored).

    `exclude` names paths (relative to the repository root) left out of the tree entirely,
    e.g. tool state kept inside the work tree.
    """
    with tempfile.TemporaryDirectory(prefix="plan-build-index-") as tmp:
        index = Path(tmp) / "index"
        real = repo.git_dir / "index"
        if real.exists():
            shutil.copyfile(real, index)
        env = git_env()
        env["GIT_INDEX_FILE"] = str(index)
        skip = [f":(exclude,literal){p}" for p in exclude]
        repo.git("add", "-A", "--", ".", *skip, env=env)
        if exclude:
            literal = [f":(literal){p}" for p in exclude]
            repo.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *literal, env=env)
        return repo.git("write-tree", env=env).stdout.strip()


def index_tree(repo: Repo) -> str:
    """The tree id of the user's staged state (read-only: the real index is copied first)."""
    with tempfile.TemporaryDirectory(prefix="plan-build-index-") as tmp:
        index = Path(tmp) / "index"
        real = repo.git_dir / "index"
        if not real.exists():
            return EMPTY_TREE
        shutil.copyfile(real, index)
        env = git_env()
        env["GIT_INDEX_FILE"] = str(index)
        return repo.git("write-tree", env=env).stdout.strip()


def changed_paths(repo: Repo, old_tree: str, new_tree: str) -> list[str]:
    """Paths that differ between two trees (renames reported as delete + add)."""
    out = repo.git("diff-tree", "-r", "--no-renames", "--name-only", "-z", old_tree, new_tree)
    return [p for p in out.stdout.split("\0") if p]


__all__ = ["EMPTY_TREE", "changed_paths", "index_tree", "worktree_tree"]
