"""The explicit context every review step receives: repository, project root, environment,
console, interaction, templates, configuration, clock, and the Claude session (resolved once,
lazily)."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import claudesessions as sessions
from plan_build.core import clock, gitrepo
from plan_build.core import config as config_mod
from plan_build.core.context import Session
from plan_build.core.interact import Interaction
from plan_build.core.ui import Console
from plan_build.review.layout import WORKFLOWS, find_root

utc_now = clock.now  # the review clock a test may replace (ReviewContext.clock)


REVIEW_STATE = WORKFLOWS.parent  # .claude/codex-review


def review_state_path(repo_root: Path, root: Path) -> str:
    """`.claude/codex-review` of the project root, relative to the repository root."""
    return os.path.relpath(root / REVIEW_STATE, repo_root)


def fingerprint(repo: gitrepo.Repo, root: Path) -> str:
    """The tree id of the work tree without the review workflows' own files (which change
    with every round and are not part of the change under review)."""
    from plan_build.core import (
        snapshot,  # implementation rounds only: a plan round's status skips it
    )

    return snapshot.worktree_tree(repo, exclude=[review_state_path(repo.root, root)])


def changed_since_head(repo: gitrepo.Repo, tree: str) -> list[str]:
    """Paths in which `tree` differs from the last commit (every path when there is none)."""
    from plan_build.core import snapshot

    head = repo.git("rev-parse", "--verify", "--quiet", "HEAD^{tree}", check=False).stdout.strip()
    return snapshot.changed_paths(repo, head or snapshot.EMPTY_TREE, tree)


@dataclass
class ReviewContext:
    repo: gitrepo.Repo
    root: Path
    cwd: Path
    env: dict[str, str]
    console: Console
    ui: Interaction
    templates: Path
    config: config_mod.Config
    explicit: str | None = None
    clock: Callable[[], _dt.datetime] = utc_now
    find_session: Callable[[], sessions.ClaudeSession | None] | None = None
    _session: sessions.ClaudeSession | None = field(default=None, init=False)
    _resolved: bool = field(default=False, init=False)
    warnings: list[str] = field(default_factory=list)
    parents: Callable[[], list[int]] | None = None  # the process-tree walk (tests replace it)

    @classmethod
    def build(cls, s: Session, workflow: str | None = None) -> ReviewContext:
        repo = s.repo
        return cls(
            repo=repo,
            root=find_root(s.cwd, repo.root),
            cwd=s.cwd,
            env=s.env,
            console=s.console,
            ui=s.ui,
            templates=s.resources.templates,
            config=s.config,
            explicit=workflow,
        )

    def now(self) -> _dt.datetime:
        return self.clock()

    def session(self) -> sessions.ClaudeSession | None:
        """The Claude session; with an explicit --workflow a failed hint is only a warning."""
        if not self._resolved:
            finder = self.find_session or (lambda: sessions.resolve(self.env))
            try:
                self._session = finder()
            except sessions.SessionError as exc:
                if self.explicit is None:
                    raise
                self.console.say(f"note: no Claude session ({exc.what}); using --workflow")
                self._session = None
            self._resolved = True
        return self._session

    def fingerprint(self) -> str:
        return fingerprint(self.repo, self.root)

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


__all__ = [
    "REVIEW_STATE",
    "ReviewContext",
    "changed_since_head",
    "fingerprint",
    "review_state_path",
    "utc_now",
]
