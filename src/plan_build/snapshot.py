"""Snapshots of a work tree as git tree objects, without touching the user's index or files.

A temporary index (GIT_INDEX_FILE) seeded from a copy of the real one takes `git add -A`, so
the tree includes untracked files that are not ignored. The user's index and work tree stay
byte-identical; GIT_OPTIONAL_LOCKS=0 keeps git from refreshing the real index. Seeding from
the real index is only a speed-up (its stat data lets git skip unchanged files); the tree
written from it never depends on what the seed contained.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_build import proc
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


def _add_all(repo: Repo, env: dict[str, str], exclude: Sequence[str] = TOOL_STATE) -> None:
    """Stage the whole work tree into the private index, leaving `exclude` (paths relative to
    the repository root) out entirely, even where HEAD tracks them."""
    skip = [f":(exclude,literal){p}" for p in exclude]
    try:
        # fsmonitor answers for the user's index; a private one is checked by stat alone.
        try:
            repo.git(
                "-c", "core.fsmonitor=false", "add", "-A", "--", ".", *skip, env=env, timeout=600
            )
        except CommandFailed:
            nested = _nested_repos(repo, env)
            if not nested:
                raise
            _add_with_nested(repo, env, skip, nested)
        if exclude:
            literal = [f":(literal){p}" for p in exclude]
            repo.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *literal, env=env)
    except CommandFailed as exc:
        raise PlanBuildError(
            f"cannot snapshot the work tree: {exc.what}",
            "make every file in the work tree readable (or ignore it in .gitignore), then retry",
            code=ExitCode.BLOCKED,
        ) from exc


def _nested_repos(repo: Repo, env: dict[str, str]) -> list[str]:
    """Untracked git repositories inside the work tree (`git init sub`, `cargo new`): git
    lists them as directories, and `git add` refuses one that has no commit yet."""
    out = repo.git("ls-files", "-z", "--others", "--exclude-standard", env=env, check=False)
    return [
        p.rstrip("/")
        for p in out.stdout.split("\0")
        if p.endswith("/") and (repo.root / p / ".git").exists()
    ]


def _add_with_nested(repo: Repo, env: dict[str, str], skip: list[str], nested: list[str]) -> None:
    """Stage everything but the nested repositories, then each as a gitlink: its HEAD, or the
    empty tree's id for one without a commit, so the snapshot shows a path that appeared."""
    skip = skip + [f":(exclude,literal){p}" for p in nested]
    repo.git("-c", "core.fsmonitor=false", "add", "-A", "--", ".", *skip, env=env, timeout=600)
    for path in nested:
        head = repo.git("-C", path, "rev-parse", "-q", "--verify", "HEAD", check=False)
        sha = head.stdout.strip() if head.ok and head.stdout.strip() else EMPTY_TREE
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},{path}", env=env)


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


# ----------------------------------------------------------------------------- ignored files

# What git ignores is invisible to the tree snapshots above, yet that is where secrets (.env),
# local configuration and tool environments (.venv, node_modules) live. A stat-level snapshot
# covers it: per path its type and mode, size, mtime_ns and ctime_ns (ctime cannot be set back
# from user space, so a forged mtime still shows), and a content hash for small files git lists
# one by one (files inside a wholly ignored directory are many, so stat data stands for them).
SMALL_FILE = 64 * 1024
FIND_FORMAT = "%p\\0%y\\0%m\\0%s\\0%T@\\0%C@\\0%l\\0"
Entries = dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Ignored:
    """What git ignores: small individually ignored files with their stat data and hash, and
    the raw listing of wholly ignored directories (parsed only when it differs, so an unchanged
    node_modules costs one `find` and one string comparison)."""

    files: Entries
    walked: str


def ignored_files(repo: Repo, *, exclude: Sequence[str] = TOOL_STATE) -> Ignored:
    """Every path git ignores in the work tree, with its stat data (see above)."""
    out = repo.git(
        "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"
    ).stdout
    skip = tuple(p.rstrip("/") for p in exclude)
    files: Entries = {}
    dirs: list[str] = []
    for entry in out.split("\0"):
        path = entry.rstrip("/")
        if not path or any(path == x or path.startswith(x + "/") for x in skip):
            continue
        if entry.endswith("/"):
            dirs.append(path)
        else:
            files[path] = _stat_entry(repo.root / path, hash_small=True)
    return Ignored(files, _walk(repo, dirs) if dirs else "")


def _stat_entry(path: Path, *, hash_small: bool) -> tuple[str, ...]:
    import hashlib
    import os
    import stat

    try:
        st = path.lstat()
    except OSError:
        return ("gone",)
    if stat.S_ISLNK(st.st_mode):
        return ("l", oct(st.st_mode), os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return ("d", oct(st.st_mode))
    entry: tuple[str, ...] = (
        "f",
        oct(st.st_mode),
        str(st.st_size),
        str(st.st_mtime_ns),
        str(st.st_ctime_ns),
    )
    if hash_small and stat.S_ISREG(st.st_mode) and st.st_size <= SMALL_FILE:
        try:
            digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
        except OSError:
            digest = "unreadable"
        entry = (*entry, digest)
    return entry


def _walk(repo: Repo, dirs: list[str]) -> str:
    """The listing of everything under wholly ignored directories: one `find` (fast even for
    a 50,000-file node_modules), or the same fields from a Python walk where find has no
    -printf."""
    try:
        done = proc.run(
            ["find", *(f"./{d}" for d in dirs), "-printf", FIND_FORMAT],
            cwd=repo.root,
            timeout=600,
        )
        if done.ok:
            return done.stdout
    except (proc.CommandNotFound, proc.CommandTimeout):
        pass
    import os

    parts: list[str] = []
    for top in dirs:
        for base, subdirs, names in os.walk(repo.root / top):
            rel = Path(base).relative_to(repo.root).as_posix()
            for name in [*subdirs, *names]:
                entry = _stat_entry(Path(base) / name, hash_small=False)
                fields = [f"./{rel}/{name}", *entry, "", "", "", "", ""][:7]
                parts.append("\0".join(fields) + "\0")
    return "".join(parts)


def _parse(walked: str) -> Entries:
    found: Entries = {}
    fields = walked.split("\0")
    for i in range(0, len(fields) - 6, 7):
        path, kind, mode, size, mtime, ctime, link = fields[i : i + 7]
        path = path[2:] if path.startswith("./") else path
        if kind == "d":
            found[path] = ("d", mode)
        elif kind == "l":
            found[path] = ("l", mode, link)
        else:
            found[path] = (kind, mode, size, mtime, ctime)
    return found


def changed_ignored(before: Ignored, after: Ignored) -> list[str]:
    """Ignored paths that appeared, disappeared or changed; a directory is named only when
    nothing below it is (an empty directory created or removed)."""
    old, new = dict(before.files), dict(after.files)
    if before.walked != after.walked:
        old.update(_parse(before.walked))
        new.update(_parse(after.walked))
    changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
    parents = {q.rsplit("/", i)[0] for q in changed for i in range(1, q.count("/") + 1)}
    return [p for p in changed if (old.get(p) or new.get(p) or ("",))[0] != "d" or p not in parents]


__all__ = [
    "EMPTY_TREE",
    "TOOL_STATE",
    "Snapshot",
    "capture",
    "changed_ignored",
    "changed_paths",
    "ignored_files",
    "index_file",
    "index_tree",
    "temp_index",
    "worktree_tree",
]
