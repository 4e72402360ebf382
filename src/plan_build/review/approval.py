"""What other steps ask the review workflows: is the current change approved?

The commit step calls `current_approval(repo)`. It looks at the workflow that belongs to the
current Claude session (or, without a session, the only candidate): an active workflow means
the change is still in review; a completed one is approved only if plan-build recorded the
final approval of an implementation round, and that approval is *stale* when the work tree
(without `.claude/codex-review/`) is no longer the tree that round reviewed. An approval file
without its matching protected twin (review/twins.py) is no approval: an agent's file tools
can write the workflow folder, never the twin.

It never writes anything and never claims a workflow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from plan_build.core import claudesessions as sessions
from plan_build.core.gitrepo import Repo
from plan_build.review import twins
from plan_build.review.folders import load_all
from plan_build.review.layout import WorkflowDir, find_root
from plan_build.review.resolution import resolve
from plan_build.review.roundfiles import load_approval
from plan_build.review.runtime import fingerprint
from plan_build.review.workflowfile import Workflow


@dataclass(frozen=True)
class Approval:
    approved: bool  # an implementation round was approved by plan-build
    tree: str | None  # the work-tree fingerprint that round reviewed
    workflow: str | None  # the workflow id the answer is about
    stale: bool | None = None  # the work tree moved since (None when there is nothing to compare)
    current_tree: str | None = None
    reason: str = ""  # one line for the user
    active_phase: str | None = None  # the workflow is still in review, in this phase

    @property
    def fresh(self) -> bool:
        """Approved, and for exactly the change that is in the work tree now."""
        return self.approved and self.stale is False


def current_tree(repo: Repo, cwd: Path | None = None) -> str:
    """The fingerprint review rounds record (the work tree minus the review workflows)."""
    return fingerprint(repo, find_root(cwd or repo.root, repo.root))


def current_approval(
    repo: Repo,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    workflow: str | None = None,
    parents: Callable[[], list[int]] | None = None,
    current: Callable[[], str] | None = None,
) -> Approval:
    """Whether the current change has a review approval, for which tree, from which workflow.

    `current` gives the current fingerprint when the caller already took it (`status`).
    Raises PlanBuildError when the answer is ambiguous (several candidate workflows, a
    Claude session hint that does not resolve, a corrupt workflow file)."""
    env = dict(env if env is not None else repo.env or {})
    root = find_root(cwd or repo.root, repo.root)
    try:
        session = sessions.resolve(env, parents=parents or sessions.ancestors)
    except sessions.SessionError:
        if workflow is None:
            raise
        session = None
    res = resolve(root, session, env, workflow, acting=True)
    wf: Workflow | None = res.workflow
    if wf is not None and wf.active:
        return Approval(
            False,
            None,
            wf.id,
            reason=f"workflow {wf.id} is still in review ({wf.phase} round {wf.round})",
            active_phase=wf.phase,
        )
    now = current() if current is not None else fingerprint(repo, root)
    if wf is None:
        wf = _best_completed(repo, root, session.session_id if session else None, now)
    if wf is None:
        return Approval(
            False, None, None, current_tree=now, reason="no review workflow for this change"
        )
    wdir = WorkflowDir(root, wf.id)
    record = load_approval(wdir, "implement", wf.round) if wf.phase == "implement" else None
    if wf.status != "completed" or record is None:
        why = "was marked done without approval" if wf.status == "completed" else f"is {wf.status}"
        return Approval(False, None, wf.id, current_tree=now, reason=f"workflow {wf.id} {why}")
    forged = twins.check(repo, wdir, "implement", wf.round)
    if forged is not None:
        return Approval(False, None, wf.id, current_tree=now, reason=forged)
    if record.reviewed_tree is None:
        return Approval(
            True,
            None,
            wf.id,
            None,
            now,
            reason=f"workflow {wf.id} was approved, but the change it reviewed is unknown",
        )
    moved = now != record.reviewed_tree
    reason = (
        f"workflow {wf.id}: the change moved since implementation round {wf.round} was approved"
        if moved
        else f"workflow {wf.id}: implementation round {wf.round} approved for this change"
    )
    return Approval(True, record.reviewed_tree, wf.id, moved, now, reason)


def _best_completed(repo: Repo, root: Path, session_id: str | None, now: str) -> Workflow | None:
    """Among completed workflows (the session's and unowned ones when a session is known):
    one whose final approval covers exactly the current tree, else the most recent."""
    done = [w for w in load_all(root) if w.status == "completed"]
    if session_id is not None:
        done = [w for w in done if w.owner_session_id in (session_id, "")]
    if not done:
        return None
    done.sort(key=lambda w: (w.updated_at, w.id), reverse=True)
    for w in done:
        if w.phase != "implement":
            continue
        wdir = WorkflowDir(root, w.id)
        record = load_approval(wdir, "implement", w.round)
        if (
            record is not None
            and record.reviewed_tree == now
            and twins.check(repo, wdir, "implement", w.round) is None
        ):
            return w
    return done[0]


__all__ = ["Approval", "current_approval", "current_tree"]
