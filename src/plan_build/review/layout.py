"""Where a review workflow's files live, and what a workflow id may look like.

The layout is codex-review's (docs/review.md#files): everything of one workflow sits in
`.claude/codex-review/workflows/<id>/` under the project root. plan-build adds two kinds of
files of its own next to the round artifacts (`<phase>-round-r<N>.json`, the round record,
and `<phase>-approval-r<N>.json`, the approval record), and `plan-build-owner.json` (the
owning Claude process) next to `workflow.json`; codex-review ignores them.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path

from plan_build.core import clock
from plan_build.core.errors import usage
from plan_build.core.fsutil import confine

WORKFLOWS = Path(".claude") / "codex-review" / "workflows"
PHASES = ("plan", "implement")

# The id codex-review generates: UTC creation time plus 3 random bytes.
GENERATED_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
# What plan-build accepts as a directory name: no separators, no "..", no leading dot.
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_id(value: str) -> str:
    """`value` if it is safe to use as a directory name, else a usage error."""
    if not SAFE_ID.match(value) or ".." in value:
        raise usage(
            f"{value!r} is not a workflow id",
            "workflow ids look like 20261130-021500-a1b2c3 "
            "(see them with: plan-build review.doctor)",
        )
    return value


def new_id(now: _dt.datetime) -> str:
    import secrets  # only a new workflow needs it: read-only commands skip hashlib/OpenSSL

    return f"{clock.sortable_id(now)}-{secrets.token_hex(3)}"


def stamp(now: _dt.datetime) -> str:
    """RFC 3339 UTC with whole seconds and a Z, as both tools write it."""
    return clock.stamp(now)


def find_root(cwd: Path, repo_root: Path) -> Path:
    """The nearest directory from `cwd` up to the repository root that already holds
    workflows; the repository root when none does."""
    here = cwd.resolve()
    top = repo_root.resolve()
    for directory in (here, *here.parents):
        if (directory / WORKFLOWS).is_dir():
            return directory
        if directory == top:
            break
    return top


@dataclass(frozen=True)
class WorkflowDir:
    root: Path  # the project root (the directory holding .claude/)
    id: str

    @property
    def path(self) -> Path:
        return self.root / WORKFLOWS / self.id

    @property
    def workflow_json(self) -> Path:
        return self.path / "workflow.json"

    @property
    def ledger(self) -> Path:
        return self.path / "decisions.tsv"

    @property
    def lock(self) -> Path:
        return self.path / ".lock"

    @property
    def owner_process(self) -> Path:
        """plan-build's note of the Claude process behind the owner (codex-review ignores
        it): what recognises the same session after /clear gave it a new id."""
        return self.path / "plan-build-owner.json"

    @property
    def artifacts(self) -> Path:
        return self.path / "artifacts"

    @property
    def plan(self) -> Path:
        return self.artifacts / "plan.md"

    def review(self, phase: str, round: int) -> Path:
        return self.artifacts / f"{phase}-review-r{round}.md"

    def findings(self, phase: str, round: int) -> Path:
        return self.artifacts / f"{phase}-findings-r{round}.md"

    def record(self, phase: str, round: int) -> Path:
        return self.artifacts / f"{phase}-round-r{round}.json"

    def approval(self, phase: str, round: int) -> Path:
        return self.artifacts / f"{phase}-approval-r{round}.json"

    def rel(self, path: Path) -> str:
        """`path` relative to the project root, for messages."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def workflows_dir(root: Path) -> Path:
    return root / WORKFLOWS


def _work_tree(root: Path) -> tuple[Path, Path | None]:
    """The work tree holding the project root (the nearest directory with a .git) and its
    .git; the project root itself when there is none."""
    for directory in (root, *root.parents):
        dot_git = directory / ".git"
        if dot_git.exists():
            return directory, dot_git
    return root, None


def guard(wdir: WorkflowDir) -> WorkflowDir:
    """`wdir`, once neither the directories leading to it nor the entries in it are symbolic
    links out of the work tree (or into .git): a cloned repository's `.claude -> /elsewhere`
    or `workflows/<id> -> another project's workflow` must not steer reads or writes."""
    top, dot_git = _work_tree(wdir.root)
    confine(wdir.artifacts, top, forbid=dot_git)
    for directory in (wdir.path, wdir.artifacts):
        if directory.is_dir():
            for entry in directory.iterdir():
                if entry.is_symlink():
                    confine(entry, top, forbid=dot_git)
    return wdir


__all__ = [
    "GENERATED_ID",
    "PHASES",
    "WORKFLOWS",
    "WorkflowDir",
    "check_id",
    "find_root",
    "guard",
    "new_id",
    "stamp",
    "workflows_dir",
]
