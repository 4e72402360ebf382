"""Where the session's review stands, read from the workflow files without touching them.

`review.status` syncs the ledger under the workflow's lock; a view does neither: it judges the
round with the same rules (`gate.blocking`) from the review and findings files, and asks the
same question `commit` asks (`approval.current_approval`), handing both the tree `status`
already took, so no second snapshot of the work tree is made when the project root is the
repository root.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from plan_build.core import claudesessions as sessions
from plan_build.core import codexusage
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.review import approval as approval_mod
from plan_build.review.findings import SEVERITIES
from plan_build.review.gate import Problem, blocking, phase_round, record_of
from plan_build.review.layout import WorkflowDir, find_root
from plan_build.review.resolution import last_completed, resolve
from plan_build.review.roundfiles import RoundRecord, load_round
from plan_build.review.runtime import fingerprint
from plan_build.review.steps import RoundView, Step, inspect
from plan_build.review.transitions import approve_command
from plan_build.review.workflowfile import Workflow

RESULTS = ("clean", "findings", "failed", "skipped")
_SEV: tuple[str, ...] = tuple(s.lower() for s in SEVERITIES)


@dataclass(frozen=True)
class ReviewerResult:
    name: str
    result: str | None  # one of RESULTS; None when no record says (a round codex-review ran)
    round: int  # the round this result is from (the last one a record exists for)
    reason: str | None
    # Codex's token use in that round (None: not a Codex reviewer, or no record kept it)
    usage: codexusage.Summed | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "result": self.result,
            "round": self.round,
            "reason": self.reason,
            "usage": self.usage.as_json() if self.usage is not None else None,
        }


@dataclass(frozen=True)
class ApprovalFacts:
    state: str  # "fresh" | "stale" | "none" | "unknown" (approved, reviewed change unknown)
    workflow: str | None
    reason: str
    reviewed_tree: str | None
    current_tree: str | None
    answer: approval_mod.Approval | None = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "workflow": self.workflow,
            "reason": self.reason,
            "reviewed_tree": self.reviewed_tree,
            "current_tree": self.current_tree,
        }


@dataclass(frozen=True)
class ReviewFacts:
    workflow: str | None = None
    status: str | None = None  # active / completed / cancelled
    phase: str | None = None  # plan / implement
    round: int | None = None
    step: str | None = None
    reviewers: tuple[ReviewerResult, ...] = ()
    findings: int = 0
    open_by_severity: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_SEV, 0))
    missing_decisions: tuple[str, ...] = ()
    findings_file: str | None = None
    blocking: tuple[str, ...] = ()  # what stands before this round's approval
    waivable: tuple[str, ...] = ()  # what only the user may approve past
    next: str | None = None  # the fix for the first blocker, or the approval command
    approval: ApprovalFacts | None = None
    problem: str | None = None  # why the review state could not be read
    skipped: tuple[str, ...] = ()  # workflow folders that are not readable workflows

    @property
    def label(self) -> str | None:
        if self.phase is None or self.round is None:
            return None
        return phase_round(self.phase, self.round)

    def as_json(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "status": self.status,
            "phase": self.phase,
            "round": self.round,
            "step": self.step,
            "reviewers": [r.as_json() for r in self.reviewers],
            "findings": self.findings,
            "open": dict(self.open_by_severity),
            "missing_decisions": list(self.missing_decisions),
            "findings_file": self.findings_file,
            "blocking": list(self.blocking),
            "waivable": list(self.waivable),
            "next": self.next,
            "approval": self.approval.as_json() if self.approval else None,
            "problem": self.problem,
            "skipped": list(self.skipped),
        }


class _Where:
    """The context the round rules need: `rel` and the current fingerprint, taken once."""

    def __init__(self, repo: Repo, root: Path, tree: str | None) -> None:
        self.repo, self.root = repo, root
        # the kept index excludes `.claude/codex-review` of the repository root: the same tree
        # as the fingerprint exactly when the workflows live there
        self._tree = tree if root == repo.root.resolve() else None

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def fingerprint(self) -> str:
        if self._tree is None:
            self._tree = fingerprint(self.repo, self.root)
        return self._tree


def _result(run_status: str, findings: list[str]) -> str:
    if run_status == "ok":
        return "findings" if findings else "clean"
    return run_status if run_status in RESULTS else "failed"


def _last_record(view: RoundView) -> RoundRecord | None:
    """The newest round record of this phase (a round not yet reviewed has none)."""
    for rnd in range(view.round, 0, -1):
        try:
            record = load_round(view.wdir, view.phase, rnd)
        except PlanBuildError:
            return None
        if record is not None:
            return record
    return None


def _reviewers(view: RoundView) -> tuple[ReviewerResult, ...]:
    record = _last_record(view)
    if record is not None:
        return tuple(
            ReviewerResult(
                name,
                _result(run.status, run.findings),
                record.round,
                run.reason,
                None if run.usage_sum is None else codexusage.sum_from_json(run.usage_sum),
            )
            for name, run in record.reviewers.items()
        )
    # a round plan-build did not run (codex-review's): who found something is known, no more
    names = sorted({f.reviewer for f in view.findings})
    return tuple(ReviewerResult(n, "findings", view.round, None) for n in names)


def _next(wf: Workflow, view: RoundView, hard: list[Problem], waivable: list[Problem]) -> str:
    for p in hard:
        if p.fix:
            return p.fix.removeprefix("run ")
    if view.step == Step.APPROVAL:
        return approve_command(wf) if waivable else "plan-build review.approve"
    return "plan-build review"


def _round(where: _Where, wf: Workflow, wdir: WorkflowDir) -> ReviewFacts:
    view = inspect(wf, wdir)
    record = record_of(view)
    opened = dict.fromkeys(_SEV, 0)
    for f in view.undecided:
        opened[f.severity.lower()] += 1
    found = blocking(where, view, record) if wf.active else []
    hard = [p for p in found if not p.waivable]
    soft = [p for p in found if p.waivable]
    return ReviewFacts(
        workflow=wf.id,
        status=wf.status,
        phase=wf.phase,
        round=wf.round,
        step=view.step.value,
        reviewers=_reviewers(view),
        findings=len(view.findings),
        open_by_severity=opened,
        missing_decisions=tuple(f.id for f in view.undecided),
        findings_file=where.rel(view.findings_path),
        blocking=tuple(p.text for p in hard),
        waivable=tuple(p.text for p in soft),
        next=_next(wf, view, hard, soft) if wf.active else None,
    )


def _approval(repo: Repo, env: Mapping[str, str], cwd: Path, where: _Where) -> ApprovalFacts:
    got = approval_mod.current_approval(repo, env=env, cwd=cwd, current=where.fingerprint)
    if not got.approved:
        state = "none"
    elif got.stale is None:
        state = "unknown"
    else:
        state = "stale" if got.stale else "fresh"
    return ApprovalFacts(state, got.workflow, got.reason, got.tree, got.current_tree, got)


def gather(
    repo: Repo,
    env: Mapping[str, str],
    cwd: Path,
    *,
    tree: str | None,
    since: str | None = None,
    approval: bool = True,
) -> ReviewFacts:
    """The review facts for the session (its active workflow, else the last one it finished
    after `since`, the session's start); `tree` is the work tree `status` already took.
    `approval=False` leaves out what `commit` would find (a committed session is past it)."""
    root = find_root(cwd, repo.root)
    where = _Where(repo, root, tree)
    try:
        session = sessions.resolve(env)
        res = resolve(root, session, env)
        wf, wdir = res.workflow, res.wdir
        if wf is None:
            done = last_completed(root, session)
            if done is not None and (since is None or done.updated_at >= since):
                wf, wdir = done, WorkflowDir(root, done.id)
        facts = _round(where, wf, wdir) if wf is not None and wdir is not None else ReviewFacts()
        # what `commit` will ask, whichever workflow answers it (maybe an older completed one)
        found = _approval(repo, env, cwd, where) if approval else None
        return replace(facts, approval=found, skipped=tuple(x.warning() for x in res.skipped))
    except PlanBuildError as exc:  # an ambiguous or unreadable workflow: say it, show the rest
        return ReviewFacts(problem=exc.what, next=exc.fix)


__all__ = ["RESULTS", "ApprovalFacts", "ReviewFacts", "ReviewerResult", "gather"]
