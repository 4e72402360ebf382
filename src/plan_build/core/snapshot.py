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

from plan_build.core import checkpoint, ctimescan, fsutil
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo, git_env
from plan_build.core.proc import CommandFailed

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# plan-build's own state inside the work tree: review rounds write here, so it is never part of
# a snapshot (a review would otherwise make itself stale, and a commit would carry it).
TOOL_STATE: tuple[str, ...] = (".claude/codex-review",)
INDEX_PREFIX = "plan-build-index-"  # private indexes live in the temp dir, named by their owner


def sweep_debris() -> None:
    """Remove private index directories that a killed run left in the temp dir."""
    fsutil.sweep(Path(tempfile.gettempdir()), INDEX_PREFIX)


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
    with fsutil.owned_tempdir(INDEX_PREFIX) as tmp:
        index = tmp / "index"
        env = git_env(repo.env)
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


def _may_hold(index: Path, paths: Sequence[str], ignorecase: bool = False) -> bool:
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
    if ignorecase:
        data = data.lower()
    return any((os.fsencode(p).lower() if ignorecase else os.fsencode(p)) in data for p in paths)


def add_all(repo: Repo, env: dict[str, str], exclude: Sequence[str] = TOOL_STATE) -> None:
    """Stage the whole work tree into the private index, leaving `exclude` (paths relative to
    the repository root) out entirely, even where HEAD tracks them: in any case where the file
    system folds case (core.ignorecase: on macOS `tasks.md` is `TASKS.md`)."""
    icase = repo.names.ignorecase
    magic = "literal,icase" if icase else "literal"
    skip = [f":(exclude,{magic}){p}" for p in (*exclude, *_sandbox_debris(repo, env))]
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
        # `add` never adds an excluded path, so only entries the seed brought can be there
        if exclude and _may_hold(Path(env["GIT_INDEX_FILE"]), exclude, icase):
            literal = [f":({magic}){p}" for p in exclude]
            repo.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *literal, env=env)
    except CommandFailed as exc:
        raise PlanBuildError(
            f"cannot snapshot the work tree: {exc.what}",
            "make every file in the work tree readable (or ignore it in .gitignore), then retry",
            code=ExitCode.BLOCKED,
        ) from exc


# While a sandboxed command runs, Claude Code's sandbox puts empty mount points for these in
# the working directory (measured, 2.1.332); they vanish afterwards. A plan-build command that
# runs meanwhile (through the broker) must not take them for the session's change.
MOUNT_POINTS = tuple(sorted(checkpoint.MOUNT_POINTS | {".claude"}))  # .claude: a folder


def mount_debris(root: Path) -> list[str]:
    """The mount points of `MOUNT_POINTS` present in `root` that hold nothing: an empty file,
    or a folder whose files are all empty (the caller keeps out the ones git tracks)."""
    found = []
    for name in MOUNT_POINTS:
        path = root / name
        try:
            if path.is_symlink():
                continue
            empty_file = path.is_file() and path.stat().st_size == 0
            if empty_file or (path.is_dir() and all(_holds_nothing(p) for p in path.rglob("*"))):
                found.append(name)
        except OSError:
            continue
    return found


def _holds_nothing(path: Path) -> bool:
    return path.is_dir() or (path.is_file() and not path.is_symlink() and path.stat().st_size == 0)


def _sandbox_debris(repo: Repo, env: dict[str, str]) -> list[str]:
    """Claude's sandbox mount points present right now (`MOUNT_POINTS`), empty and untracked:
    never part of a snapshot. Costs one git call only when one is there."""
    found = mount_debris(repo.root)
    if not found:
        return []
    tracked = repo.git("ls-files", "-z", "--", *found, env=env, check=False).stdout.split("\0")
    return [p for p in found if not any(t == p or t.startswith(p + "/") for t in tracked if t)]


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
        add_all(repo, env, exclude)
        full = repo.git("write-tree", env=env).stdout.strip()
    return Snapshot(staged_tree=staged, worktree_tree=full)


def worktree_tree(repo: Repo, *, exclude: Sequence[str] = TOOL_STATE) -> str:
    """The tree id of the whole work tree as it is now (tracked and untracked, not ignored),
    without plan-build's own state (`exclude`)."""
    with temp_index(repo, "user") as env:
        add_all(repo, env, exclude)
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

    def adopt(self, index: Path) -> None:
        """Start from a copy of `index`, an index whose snapshot is exact for the user's index
        as it is now (the session's kept one, `statusindex`): its fresh stat data spares the
        first snapshot re-hashing every changed file."""
        self._index.unlink(missing_ok=True)
        shutil.copy2(index, self._index)  # mtime kept: git's racy-clean check depends on it
        self._seed = self._seed_stat()

    def tree(self) -> str:
        """The tree id of the whole work tree as it is now (as `worktree_tree`)."""
        seed = self._seed_stat()
        if seed != self._seed or not self._index.exists():
            self._index.unlink(missing_ok=True)
            if index_file(self.repo).exists():
                shutil.copy2(index_file(self.repo), self._index)  # mtime kept: see temp_index
            self._seed = seed
        env = git_env(self.repo.env)
        env["GIT_INDEX_FILE"] = str(self._index)
        add_all(self.repo, env, self.exclude)
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


# ----------------------------------------------------------------------------- ignored files

# What git ignores is invisible to the tree snapshots above, yet that is where secrets (.env),
# local configuration and tool environments (.venv, node_modules) live. Files git lists one by
# one get a stat-level entry (type, mode, size, mtime_ns, ctime_ns) plus a content hash when
# small. Wholly ignored directories (a 50,000-file node_modules) are not walked twice: the
# "before" side only notes the time, and the "after" side asks for every path whose ctime is
# newer (ctimescan: one GNU `find`, or the portable walk where find is BSD's). ctime cannot be
# set from user space (a write, chmod, rename or utime always moves it), so a forged mtime
# still shows. A removed file shows as its changed directory.
SMALL_FILE = 64 * 1024
# file timestamps come from the kernel's coarse clock, which may lag time.time() by a tick
CLOCK_MARGIN_NS = 50_000_000
Entries = dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Ignored:
    """What git ignores at one moment (see above)."""

    files: Entries  # individually ignored files: stat data, and a hash when small
    dirs: tuple[str, ...]  # wholly ignored directories
    taken_ns: int  # wall-clock time of the snapshot, minus CLOCK_MARGIN_NS

    def as_json(self) -> dict[str, object]:
        """Small enough to save (no per-file data for the big directories): a dispatch that
        resumes after a SIGKILL checks the stopped run's ignored paths too."""
        return {
            "files": {k: list(v) for k, v in self.files.items()},
            "dirs": list(self.dirs),
            "taken_ns": self.taken_ns,
        }

    @classmethod
    def from_json(cls, data: object) -> Ignored | None:
        if not isinstance(data, dict):
            return None
        try:
            files = {str(k): tuple(str(x) for x in v) for k, v in data["files"].items()}
            return cls(files, tuple(str(d) for d in data["dirs"]), int(data["taken_ns"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def ignored_files(repo: Repo, *, exclude: Sequence[str] = TOOL_STATE) -> Ignored:
    """The ignored paths of the work tree now, cheaply (see above)."""
    import time

    taken = time.time_ns() - CLOCK_MARGIN_NS
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
            files[path] = _stat_entry(repo.root / path)
    return Ignored(files, tuple(dirs), taken)


def _stat_entry(path: Path) -> tuple[str, ...]:
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
    if stat.S_ISREG(st.st_mode) and st.st_size <= SMALL_FILE:
        try:
            digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
        except OSError:
            digest = "unreadable"
        entry = (*entry, digest)
    return entry


def changed_ignored(
    repo: Repo, before: Ignored, *, exclude: Sequence[str] = TOOL_STATE
) -> list[str]:
    """Ignored paths that appeared, disappeared or changed since `before`; a directory is
    named only when nothing below it is (a file removed from it, an empty one made)."""
    after = ignored_files(repo, exclude=exclude)
    changed = {
        p
        for p in before.files.keys() | after.files.keys()
        if before.files.get(p) != after.files.get(p)
    }
    dirs: set[str] = set()
    changed.update(d for d in before.dirs if d not in after.dirs)  # removed as a whole
    if after.dirs:
        for kind, path in ctimescan.changed_since(repo.root, after.dirs, before.taken_ns, repo.env):
            (dirs if kind == "d" else changed).add(path)
    parents = {q.rsplit("/", i)[0] for q in changed for i in range(1, q.count("/") + 1)}
    changed.update(d for d in dirs if d not in parents)
    return sorted(changed)


__all__ = [
    "EMPTY_TREE",
    "TOOL_STATE",
    "Rescan",
    "Snapshot",
    "add_all",
    "capture",
    "changed_ignored",
    "changed_paths",
    "ignored_files",
    "index_file",
    "index_tree",
    "temp_index",
    "worktree_tree",
]
