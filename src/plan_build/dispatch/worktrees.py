"""The linked git worktrees a wave runs its tasks in, under the git common dir.

`<common dir>/plan-build/worktrees/<wave id>/<TASK-ID>`, made with `git worktree add --detach
--no-checkout` and filled with `read-tree -u --reset TREE`: TREE is the user's work tree as a
snapshot (tracked and untracked files, the intended change included; ignored files are not in
it), so the task starts from what the user has, not from HEAD. The user's index and files are
never touched. Removal is `git worktree remove --force` and `git worktree prune`.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from plan_build.core import locks
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo, discover


def base(repo: Repo) -> Path:
    return repo.state_dir / "worktrees"


@contextlib.contextmanager
def _admin(repo: Repo) -> Iterator[None]:
    """One `git worktree add/remove/prune` at a time in the repository (any process): a prune
    while another wave's add is half done would drop the new worktree's record."""
    base(repo).mkdir(parents=True, exist_ok=True)
    lock = locks.FileLock(base(repo) / ".admin.lock", mode=0o600)
    lock.acquire(wait=True)
    try:
        yield
    finally:
        lock.release()


def where(repo: Repo, wave_id: str, task_id: str) -> Path:
    return base(repo) / wave_id / task_id


def create(repo: Repo, wave_id: str, task_id: str, tree: str) -> Repo:
    """A new worktree for `task_id` holding `tree`'s files; returns it as a Repo."""
    path = where(repo, wave_id, task_id)
    if path.exists():
        raise PlanBuildError(
            f"a worktree for {task_id} already exists at {path}",
            "run plan-build dispatch --wave again to resume it, or remove it with: "
            f"git worktree remove --force {path}",
            code=ExitCode.USAGE,
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    head = repo.head()
    if head is None:
        raise PlanBuildError(
            "a wave needs a commit to create its worktrees from",
            "commit once (git commit), then run plan-build dispatch --wave again",
            code=ExitCode.USAGE,
        )
    with _admin(repo):
        repo.git("worktree", "add", "--detach", "--no-checkout", str(path), head)
    made = discover(path, repo.env)
    made.git("read-tree", "-u", "--reset", tree)
    return made


def open_existing(repo: Repo, path: Path) -> Repo | None:
    """The worktree at `path` when it is still one of this repository's, else None."""
    if not (path / ".git").is_file():
        return None
    try:
        found = discover(path, repo.env)
    except PlanBuildError:
        return None
    if found.root.resolve() != path.resolve():
        return None
    return found


def remove(repo: Repo, path: Path) -> None:
    """Remove the worktree at `path` (and what git keeps about it); never raises."""
    with _admin(repo):
        removed = False
        with contextlib.suppress(PlanBuildError, OSError):
            removed = repo.git("worktree", "remove", "--force", str(path), check=False).ok
        if not removed:  # half made, or moved: drop its files, then git's record of it
            with contextlib.suppress(OSError):
                if path.exists() and base(repo) in path.parents:
                    shutil.rmtree(path)
            with contextlib.suppress(PlanBuildError, OSError):
                repo.git("worktree", "prune", check=False)
    with contextlib.suppress(OSError):
        # the task's own Codex home and temporary folder (worktreeprep.codex_dir)
        own = path.parent / f".{path.name}.codex"
        if own.is_dir() and not own.is_symlink() and base(repo) in own.parents:
            shutil.rmtree(own)
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # the wave's folder, once its last worktree is gone


__all__ = ["base", "create", "open_existing", "remove", "where"]
