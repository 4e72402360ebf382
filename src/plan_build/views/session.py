"""The session header both views show: who the session is and what it changed so far.

Read-only and cheap: the baseline record, `.agentmemory-project` checked against HEAD (one
git call) and the intended change through the session's kept index (`statusindex`, the warm
path `status` always had). A committed session's change is its commit against its parent.
Every fact a record does not hold is None, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core import sessionvars
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery import intended
from plan_build.delivery.baseline import Baseline

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class FileCount:
    """One file of the intended change: its status (A/M/D/T) and lines added/removed."""

    path: str  # as a user reads it (control characters escaped)
    status: str
    added: int | None  # None: binary
    removed: int | None
    old_mode: str | None = None  # as git writes it; None: absent on that side
    new_mode: str | None = None
    json_path: str = ""  # the real name when it is valid UTF-8 (JSON), else the escaped form

    @property
    def binary(self) -> bool:
        return self.added is None

    def as_json(self) -> dict[str, Any]:
        """The shape `status --json` always had (lines removed are `deleted` there)."""
        return {
            "path": self.json_path or self.path,
            "status": self.status,
            "added": self.added,
            "deleted": self.removed,
            "binary": self.binary,
            "old_mode": self.old_mode,
            "new_mode": self.new_mode,
        }


@dataclass(frozen=True)
class ChangeFacts:
    """The intended change (today's content), or the committed one once committed."""

    baseline_tree: str  # the tree it is counted from (a committed change: the parent's)
    tree: str  # the work tree it was read from (a committed change: the commit's tree)
    files: tuple[FileCount, ...]

    @property
    def empty(self) -> bool:
        return not self.files

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed or 0 for f in self.files)

    def summary(self) -> str:
        if self.empty:
            return "no change yet"
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''}, +{self.added} −{self.removed}"

    def as_json(self) -> dict[str, Any]:
        return {
            "baseline_tree": self.baseline_tree,
            "tree": self.tree,
            "count": len(self.files),
            "added": self.added,
            "deleted": self.removed,
            "files": [f.as_json() for f in self.files],
        }


@dataclass(frozen=True)
class IdentityFacts:
    """The AgentMemory project identity as the repository holds it."""

    value: str | None
    committed: bool | None
    problem: str | None  # why it cannot be used as it is (missing, uncommitted, differs)

    def as_json(self) -> dict[str, Any]:
        return {"value": self.value, "committed": self.committed, "problem": self.problem}


@dataclass(frozen=True)
class MemoryFacts:
    """The memory mode the session was launched with ("required" / "degraded"), and why."""

    mode: str | None  # None: not known (a baseline taken by hand, or an older record)
    reason: str | None  # set when degraded
    source: str | None  # "baseline" (recorded at launch) or "environment" (this process)

    def as_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "reason": self.reason, "source": self.source}


@dataclass(frozen=True)
class SessionFacts:
    id: str
    mode: str | None  # "standard" / "architect"; None when the baseline does not say
    started_at: str
    branch: str | None
    baseline_commit: str | None  # HEAD when the session began (None: no commit yet)
    head: str | None  # HEAD now
    committed: str | None
    committed_at: str | None
    pre_existing: int | None  # paths with changes from before the session, kept apart
    identity: IdentityFacts
    memory: MemoryFacts
    change: ChangeFacts | None  # None: the session belongs to another worktree
    baseline: Baseline
    intended: intended.Change | None = field(default=None, compare=False, repr=False)

    @property
    def head_moved(self) -> bool:
        return self.committed is None and self.head != self.baseline_commit

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mode": self.mode,
            "started_at": self.started_at,
            "branch": self.branch,
            "baseline_commit": self.baseline_commit,
            "head": self.head,
            "head_moved": self.head_moved,
            "committed": self.committed,
            "committed_at": self.committed_at,
            "pre_existing": self.pre_existing,
            "identity": self.identity.as_json(),
            "memory": self.memory.as_json(),
            "guard": self.baseline.guard,
        }


def guard_text(guard: str | None) -> str:
    """How the session was guarded, in the header's words (status and the report; ADR 0190)."""
    if guard == "unguarded":
        return "UNGUARDED (no sandbox, chosen at the launch)"
    if guard == "sandbox":
        return "sandbox on"
    return "guard not recorded"


def _identity(repo: Repo) -> IdentityFacts:
    from plan_build.startup import identity

    try:
        found = identity.read(repo)
    except PlanBuildError as exc:
        return IdentityFacts(None, None, exc.what)
    if found is None:
        return IdentityFacts(None, None, f"{identity.FILENAME} is missing")
    problem = None if found.committed else f"{identity.FILENAME} is not committed"
    return IdentityFacts(found.value, found.committed, problem)


def _memory(base: Baseline, env: Mapping[str, str]) -> MemoryFacts:
    if base.memory_mode:
        return MemoryFacts(base.memory_mode, base.memory_reason, "baseline")
    # run inside the session's Claude: the launch's environment says it (no reason recorded)
    mode = env.get(sessionvars.MEMORY_MODE)
    if mode in sessionvars.MEMORY_MODES and env.get(sessionvars.SESSION) == base.id:
        return MemoryFacts(mode, None, "environment")
    return MemoryFacts(None, None, None)


def _files(changes: Sequence[intended.FileChange]) -> tuple[FileCount, ...]:
    return tuple(
        FileCount(
            intended.display_path(f.path),
            f.status,
            f.added,
            f.deleted,
            f.old.mode if f.old else None,
            f.new.mode if f.new else None,
            intended.path_json(f.path),
        )
        for f in changes
    )


def _committed_change(repo: Repo, commit: str) -> ChangeFacts | None:
    """What the session's commit changed (against its first parent)."""
    parent = repo.git("rev-parse", "--verify", "--quiet", f"{commit}^1^{{tree}}", check=False)
    old = parent.stdout.strip() or EMPTY_TREE
    new = repo.git("rev-parse", "--verify", "--quiet", f"{commit}^{{tree}}", check=False)
    if not new.ok:
        return None  # the commit is gone (rewritten history)
    tree = new.stdout.strip()
    return ChangeFacts(old, tree, _files(intended.files_between(repo, old, tree)))


def change_of(repo: Repo, base: Baseline) -> tuple[ChangeFacts | None, intended.Change | None]:
    """The change as the header counts it, and (uncommitted) as `commit` would plan it."""
    if base.committed:
        return _committed_change(repo, base.committed), None
    if Path(base.git_dir) != repo.git_dir:
        return None, None  # another worktree's session: its work tree is not this one
    change = intended.compute(repo, base)
    return ChangeFacts(base.worktree_tree, change.tree, _files(change.files)), change


def gather(repo: Repo, env: Mapping[str, str], *, session_id: str | None = None) -> SessionFacts:
    """The header facts of `session_id` (default: the session `status` is about)."""
    if session_id is None:
        base = baseline_mod.current(repo, env, allow_committed=True)
    else:
        base = baseline_mod.load(repo, session_id)
    change, planned = change_of(repo, base)
    return SessionFacts(
        id=base.id,
        mode=base.mode,
        started_at=base.created,
        branch=base.branch,
        baseline_commit=base.head,
        head=repo.head(),
        committed=base.committed,
        committed_at=base.committed_at,
        pre_existing=None if base.committed else baseline_mod.pre_existing(repo, base),
        identity=_identity(repo),
        memory=_memory(base, env),
        change=change,
        baseline=base,
        intended=planned,
    )


__all__ = [
    "ChangeFacts",
    "FileCount",
    "IdentityFacts",
    "MemoryFacts",
    "SessionFacts",
    "change_of",
    "gather",
]
