"""`status`'s snapshot through a private index kept between runs of one session (ADR 0131).

A fresh snapshot starts from a copy of the user's index, whose stat data is stale for every
file the user changed and absent for every untracked one, so git hashes all of them on every
`status`. Claude asks for `status` many times a session; the index kept here (in the session's
state directory) holds fresh stat data from the last run, so git re-hashes only files whose
stat data moved since, with git's own racy-clean re-check.

The kept index gives the tree a fresh snapshot would, or it is not used:
- it was seeded from the user's index as it is now (by stat), under the same git config,
  excludes and attributes files and the same git executable; else a fresh seed;
- what it tracks beyond the user's index came in as untracked, not ignored files: git lists
  the kept index's tracked files that are ignored now, and each must be tracked by the user's
  index too (else an ignore rule changed, and a fresh snapshot would leave the file out);
- a path it dropped (deleted, or a file that became a directory) has not come back: the user's
  index may track it with another mode or ignore rule than a new file gets;
- no `.gitignore` or `.gitattributes` in the tree changed since the last run.
Anything else (a missing, damaged or busy index, a git failure) means a fresh snapshot; the
kept index never makes `status` fail, nor slower than one extra `git write-tree`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from plan_build.core import fsutil, snapshot
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo, git_env
from plan_build.core.proc import CommandFailed
from plan_build.delivery.baseline import STATUS_INDEX, Baseline, sessions_dir

FORMAT = 1
MAX_GONE = 1000  # more dropped paths than this: not kept (each is checked on every run)
RULE_FILES = (".gitignore", ".gitattributes")


def home(repo: Repo, base: Baseline) -> Path:
    return repo.in_state(sessions_dir(repo) / base.id / STATUS_INDEX)


def _stat(path: Path | str) -> list[int]:
    try:
        st = os.stat(path)
    except OSError:
        return [0, 0, 0, 0]
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def seed_key(repo: Repo, exclude: Sequence[str]) -> dict[str, Any]:
    """What the kept index was seeded from and hashed under: the user's index, the files that
    set excludes, attributes and filters, and git itself, by stat."""
    env = repo.env or {}
    home = Path(env.get("HOME") or Path.home())
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "git"
    files: list[Path | str] = [
        snapshot.index_file(repo),
        repo.common_dir / "info" / "exclude",
        repo.common_dir / "info" / "attributes",
        repo.common_dir / "config",
        repo.git_dir / "config.worktree",
        home / ".gitconfig",
        xdg / "config",
        xdg / "ignore",
        xdg / "attributes",
        shutil.which("git") or "git",
    ]
    return {
        "format": FORMAT,
        "git_dir": str(repo.git_dir),
        "exclude": list(exclude),
        "files": {str(p): _stat(p) for p in files},
    }


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[bool]:
    """Hold the kept index for this run; False when a concurrent run holds it."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def tree(repo: Repo, base: Baseline, *, exclude: Sequence[str] = snapshot.TOOL_STATE) -> str:
    """The whole work tree's tree id, as `snapshot.worktree_tree` gives it."""
    return kept_tree(repo, base, exclude=exclude) or snapshot.worktree_tree(repo, exclude=exclude)


def kept_tree(
    repo: Repo,
    base: Baseline,
    *,
    exclude: Sequence[str] = snapshot.TOOL_STATE,
    adopt: Callable[[Path], None] | None = None,
) -> str | None:
    """The tree through the kept index, or None when there is none to use (no state dir, or
    one that leads elsewhere, or a concurrent run holds it). `adopt(index)` is called with the
    kept index, while it is held, when it stays kept (verify's rescan starts from a copy)."""
    try:
        directory = home(repo, base)
        with _locked(directory) as mine:
            if mine:
                current = _kept_tree(repo, directory, tuple(exclude))
                index = directory / "index"
                if adopt is not None and index.exists():
                    adopt(index)
                return current
    except (OSError, PlanBuildError):
        pass
    return None


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = fsutil.read_json(path)
    except (OSError, fsutil.StateFileError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("tree"), str):
        return None
    gone = data.get("gone")
    if not isinstance(gone, list) or not all(isinstance(p, str) for p in gone):
        return None
    return data


def _kept_tree(repo: Repo, directory: Path, exclude: tuple[str, ...]) -> str:
    index, state_file = directory / "index", directory / "state.json"
    env = git_env(repo.env)
    env["GIT_INDEX_FILE"] = str(index)
    key = seed_key(repo, exclude)
    state = _read_state(state_file)
    found: tuple[str, list[str] | None] | None = None
    if state is not None and state.get("key") == key and index.exists():
        found = _warm(repo, env, state, exclude)
    if found is None:
        state_file.unlink(missing_ok=True)  # never a state that does not match the index
        found = _cold(repo, env, exclude)
    current, gone = found
    if gone is None or len(gone) > MAX_GONE:
        index.unlink(missing_ok=True)
    else:
        fsutil.write_json(state_file, {"key": key, "tree": current, "gone": sorted(set(gone))})
    return current


def _warm(
    repo: Repo, env: dict[str, str], state: dict[str, Any], exclude: tuple[str, ...]
) -> tuple[str, list[str]] | None:
    """The tree through the kept index, or None when it might differ from a fresh one."""
    gone: list[str] = state["gone"]
    if any(os.path.lexists(repo.root / p) for p in gone):
        return None
    Path(env["GIT_INDEX_FILE"] + ".lock").unlink(missing_ok=True)  # a killed git's, not a live one
    try:
        snapshot.add_all(repo, env, exclude)
        current = repo.git("write-tree", env=env).stdout.strip()
        if not _tracks_nothing_newly_ignored(repo, env):
            return None
        if current != state["tree"]:
            dropped, rules = _since(repo, state["tree"], current)
            if rules:
                return None
            gone = gone + dropped
    except (CommandFailed, PlanBuildError):
        return None
    return current, gone


def _cold(
    repo: Repo, env: dict[str, str], exclude: tuple[str, ...]
) -> tuple[str, list[str] | None]:
    """A fresh seed from the user's index (as `snapshot.worktree_tree`), noting what it drops."""
    index = Path(env["GIT_INDEX_FILE"])
    index.unlink(missing_ok=True)
    Path(str(index) + ".lock").unlink(missing_ok=True)
    if snapshot.index_file(repo).exists():
        shutil.copy2(snapshot.index_file(repo), index)  # mtime kept: see snapshot.temp_index
    staged = repo.git("write-tree", env=env, check=False)  # fails on unmerged entries
    snapshot.add_all(repo, env, exclude)
    current = repo.git("write-tree", env=env).stdout.strip()
    if not staged.ok:  # what the seed drops is unknown: not kept
        return current, None
    base = staged.stdout.strip()
    dropped = _since(repo, base, current)[0] if base != current else []
    return current, [p for p in dropped if not _excluded(p, exclude)]


def _excluded(path: str, exclude: Sequence[str]) -> bool:
    return any(path == x or path.startswith(x.rstrip("/") + "/") for x in exclude)


def _since(repo: Repo, old: str, new: str) -> tuple[list[str], bool]:
    """Paths of `old` that `new` lacks, and whether an ignore or attributes file changed."""
    out = repo.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new).stdout
    fields = out.split("\0")
    dropped: list[str] = []
    rules = False
    for status, path in zip(fields[::2], fields[1::2], strict=False):
        if status == "D":
            dropped.append(path)
        rules = rules or path.rsplit("/", 1)[-1] in RULE_FILES
    return dropped, rules


def _tracks_nothing_newly_ignored(repo: Repo, env: dict[str, str]) -> bool:
    """Every file the kept index tracks that is ignored now is tracked by the user's index."""
    args = ("ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
    kept = {p for p in repo.git(*args, env=env).stdout.split("\0") if p}
    if not kept:
        return True
    users = {p for p in repo.git(*args).stdout.split("\0") if p}
    return kept <= users


__all__ = ["home", "kept_tree", "seed_key", "tree"]
