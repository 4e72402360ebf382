"""Whether the session's change may be committed: `commit`'s refusals, in its order, as data.

One judgement, three readers. `commit` raises the first refusal (the very error it always
raised); `status` and `report` list every one, each as a short phrase with the one command
that moves it on (ADR 0185). The rules ask a Probe for the facts. `commit`'s probe measures
the live repository (the work tree taken twice, the plan built, git asked who you are);
`status`'s answers from the facts it already gathered, through its kept index, taken once (so
it never sees a work tree that is still changing). A later rule is only asked when it means
something: nothing past a work tree that will not hold still, no overlap or verification
without a change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery.baseline import Baseline, busy_error, conflicts_error
from plan_build.delivery.commitplan import Overlap, overlap_error
from plan_build.delivery.verifyrecord import ACCEPTABLE_AT_COMMIT

if TYPE_CHECKING:
    from plan_build.core.gitrepo import Repo

# Every rule, in the order `commit` asks them.
KINDS = (
    "busy",
    "conflicts",
    "head",
    "branch",
    "settling",
    "empty",
    "overlap",
    "verify",
    "review",
    "identity",
)
VERIFY = "plan-build verify"
NEW_REVIEW = "plan-build review.plan"
PHASE = {"plan": "plan", "implement": "implementation"}


@dataclass(frozen=True)
class Refusal:
    """One reason `commit` refuses: the rule, how a list says it, what to run, commit's error."""

    kind: str  # one of KINDS
    brief: str  # as `status` and `report` list it
    next: str | None  # the one command (or action) that moves it on; None: no single one
    error: PlanBuildError  # what `commit` raises: its message, fix and exit code

    @property
    def what(self) -> str:
        return self.error.what

    @property
    def fix(self) -> str | None:
        return self.error.fix


class Approval(Protocol):
    """What review answers about the current change (`review.approval.Approval`'s shape)."""

    @property
    def approved(self) -> bool: ...
    @property
    def tree(self) -> str | None: ...
    @property
    def workflow(self) -> str | None: ...
    @property
    def stale(self) -> bool | None: ...
    @property
    def reason(self) -> str: ...
    @property
    def active_phase(self) -> str | None: ...


class Probe(Protocol):
    """The facts the rules ask for, each asked at most once and only when a rule needs it."""

    base: Baseline
    root: Path

    def busy(self) -> str | None: ...
    def unmerged(self) -> list[str]: ...
    def head(self) -> str | None: ...
    def branch(self) -> str | None: ...
    def settled(self) -> bool: ...
    def empty(self) -> bool | None: ...  # None: not known (another worktree's session)
    def overlaps(self) -> list[Overlap]: ...
    def tree(self) -> str | None: ...
    def record(self) -> dict[str, Any] | None: ...  # may raise PlanBuildError
    def approval(self) -> Approval: ...  # may raise PlanBuildError
    def identity_known(self) -> bool: ...


# --- the errors `commit` raises ---------------------------------------------------------


def _head_error(base: Baseline, head: str | None) -> PlanBuildError:
    was = base.head[:12] if base.head else "no commit yet"
    return PlanBuildError(
        f"HEAD moved since the session baseline (was {was}, now "
        f"{head[:12] if head else 'no commit'}); the session's work can no longer be told "
        "apart from other commits",
        "commit by hand after reviewing git diff, or move HEAD back "
        f"(git reset --soft {base.head or '<baseline>'}) and retry",
        code=ExitCode.BLOCKED,
    )


def _branch_error(base: Baseline, branch: str | None) -> PlanBuildError:
    return PlanBuildError(
        f"the checked-out branch changed since the session baseline "
        f"(was {base.branch or 'detached HEAD'}, now {branch or 'detached HEAD'})",
        f"switch back (git switch {base.branch})"
        if base.branch
        else "check out the baseline commit again",
        code=ExitCode.BLOCKED,
    )


SETTLING = PlanBuildError(
    "the work tree is still changing (is an agent or a build still running?)",
    "stop whatever is writing files, then run plan-build commit again",
    code=ExitCode.BLOCKED,
)
EMPTY = PlanBuildError(
    "nothing to commit: the work tree matches the session baseline",
    "there is no session work to commit",
    code=ExitCode.BLOCKED,
)
IDENTITY = PlanBuildError(
    "git does not know who you are, so it cannot write the commit",
    'set it: git config user.name "Your Name" && git config user.email you@example.com',
    code=ExitCode.BLOCKED,
)


def failed_checks(record: Mapping[str, Any]) -> list[str]:
    rows = record.get("checks")
    return [
        str(c.get("id"))
        for c in (rows if isinstance(rows, list) else [])
        if isinstance(c, dict) and c.get("status") == "fail"
    ]


def _verify_refusal(record: Mapping[str, Any] | None, tree: str | None) -> Refusal | None:
    """The verify record against the change as it is now (`tree`; None: not known)."""
    if record is None:
        return Refusal(
            "verify",
            "verify has not run on this change",
            VERIFY,
            PlanBuildError(
                "the change has not been verified",
                "run plan-build verify, fix what it reports, then commit",
                code=ExitCode.BLOCKED,
            ),
        )
    change = record.get("change")
    checked = change.get("tree") if isinstance(change, dict) else None
    if tree is not None and checked != tree:
        return Refusal(
            "verify",
            "verify ran on an earlier state of the change",
            VERIFY,
            PlanBuildError(
                "the change differs from the one last verified (files changed since "
                "plan-build verify)",
                "run plan-build verify again",
                code=ExitCode.BLOCKED,
            ),
        )
    if record.get("ok"):
        return None
    failed = failed_checks(record)
    if failed and set(failed) <= ACCEPTABLE_AT_COMMIT:
        return None  # the user decides at the approval (commitapproval.accept_allowlisted)
    named = ", ".join(failed) or "see plan-build verify"
    return Refusal(
        "verify",
        f"verification failed ({named})",
        VERIFY,
        PlanBuildError(
            f"verification failed for this change ({named})",
            "fix what plan-build verify reports and run it again",
            code=ExitCode.BLOCKED,
        ),
    )


def review_verdict(approval: Approval, tree: str | None) -> tuple[bool, str]:
    """Whether review lets this change be committed, and why.

    No review workflow at all passes (and the summary says so); otherwise the approval must be
    plan-build's, for an implementation round, and for exactly this change (`tree`, the work
    tree without plan-build's own state, which is what review rounds fingerprint).
    """
    if approval.workflow is None:
        return True, "no review recorded (no review workflow for this change)"
    if not approval.approved:
        return False, approval.reason
    if approval.tree is None:
        return False, f"{approval.reason}: review it with plan-build review.impl"
    if approval.stale or (tree is not None and approval.tree != tree):
        # an approved workflow is completed, so review.repeat has nothing to repeat
        return False, (
            f"{approval.reason}: the approval is stale; review the change again in a new "
            "workflow (plan-build review.plan)"
        )
    return True, approval.reason


def _review_refusal(approval: Approval, tree: str | None) -> Refusal | None:
    ok, why = review_verdict(approval, tree)
    if ok:
        return None
    error = PlanBuildError(
        f"review blocks the commit: {why}",
        "finish the review, then run plan-build commit again",
        code=ExitCode.BLOCKED,
    )
    if approval.active_phase is not None:
        phase = PHASE.get(approval.active_phase, approval.active_phase)
        return Refusal("review", f"the {phase} review is not approved", "plan-build review", error)
    if not approval.approved:
        brief = f"the implementation review is not approved ({approval.reason})"
    elif approval.tree is None:
        brief = "the approval does not say which change it covered"
    else:
        brief = "the implementation review's approval is stale (the change moved since)"
    return Refusal("review", brief, NEW_REVIEW, error)


# --- the rules, in commit's order ---------------------------------------------------------


def refusals(p: Probe) -> Iterator[Refusal]:
    """Every refusal, in `commit`'s order; `commit` takes the first, `status` all of them."""
    yield from _repository(p)
    if not p.settled():
        yield Refusal("settling", "the work tree is still changing", None, SETTLING)
        return  # the change is not one thing yet: nothing after this can be judged
    yield from _change(p)
    if not p.identity_known():
        yield Refusal(
            "identity", "git does not know who you are", "git config user.email …", IDENTITY
        )


def _repository(p: Probe) -> Iterator[Refusal]:
    """git in the middle of something, HEAD or the branch moved since the baseline."""
    base = p.base
    busy = p.busy()
    if busy:
        yield Refusal(
            "busy",
            f"{busy} is in progress",
            "finish or abort it (git status says how)",
            busy_error(busy, "commit", p.root),
        )
    unmerged = p.unmerged()
    if unmerged:
        yield Refusal(
            "conflicts",
            f"{len(unmerged)} path(s) have unresolved conflicts",
            "resolve the conflicts and git add the files",
            conflicts_error(unmerged, "commit"),
        )
    head = p.head()
    if head != base.head:
        yield Refusal(
            "head",
            "HEAD moved since the baseline",
            f"git reset --soft {base.head or '<baseline>'} (or commit by hand)",
            _head_error(base, head),
        )
    branch = p.branch()
    if branch != base.branch:
        yield Refusal(
            "branch",
            "the checked-out branch changed since the baseline",
            f"git switch {base.branch}" if base.branch else "check out the baseline commit",
            _branch_error(base, branch),
        )


def _change(p: Probe) -> Iterator[Refusal]:
    """The change itself: there is one, it stands apart, it was verified and reviewed."""
    empty = p.empty()
    if empty:
        yield Refusal("empty", "there is no intended change yet", None, EMPTY)
    if empty is False:
        overlaps = p.overlaps()
        if overlaps:
            yield Refusal(
                "overlap",
                f"the change overlaps uncommitted work from before the session "
                f"({len(overlaps)} path(s))",
                "bring vanished files back: plan-build restore"
                if any(o.vanished for o in overlaps)
                else "move the edits apart (or commit by hand: git add -p)",
                overlap_error(overlaps),
            )
    tree = p.tree()
    found: Refusal | None
    if not empty:
        try:
            found = _verify_refusal(p.record(), tree)
        except PlanBuildError as exc:
            found = Refusal("verify", f"the verify record cannot be read ({exc.what})", VERIFY, exc)
        if found is not None:
            yield found
    try:
        found = _review_refusal(p.approval(), tree)
    except PlanBuildError as exc:
        brief = f"the review state cannot be read ({exc.what.split(': ', 1)[0]})"
        found = Refusal("review", brief, exc.fix or "plan-build review.doctor", exc)
    if found is not None:
        yield found


def identity_known(repo: Repo) -> bool:
    """Whether git can name the author and the committer of a commit."""
    return all(
        repo.git("var", var, check=False).ok for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    )


__all__ = [
    "EMPTY",
    "IDENTITY",
    "KINDS",
    "SETTLING",
    "Approval",
    "Probe",
    "Refusal",
    "failed_checks",
    "identity_known",
    "refusals",
    "review_verdict",
]
