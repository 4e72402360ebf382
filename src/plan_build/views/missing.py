"""What `commit` still lacks, as the views say it: its own refusals asked of their facts.

The rules are `delivery.readiness`'s, in commit's order; this module only answers its probe
from what a view already gathered (`Seen`: the work tree taken once through the kept index,
so never "still changing"; the review and verify records as read) and picks the one next
command. `status` and `report` both ask here, so neither can say more or less than `commit`
would refuse for (ADR 0185).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.delivery import readiness

if TYPE_CHECKING:
    from plan_build.delivery.commitplan import Overlap
    from plan_build.views import progress, reviews
    from plan_build.views.session import SessionFacts

COMMIT = "plan-build commit"
NEW_REVIEW = readiness.NEW_REVIEW


@dataclass(frozen=True)
class RepoNow:
    """What only `commit`'s rules ask git for, asked beside the work-tree snapshot."""

    branch: str | None = None
    unmerged: tuple[str, ...] = ()
    identity_known: bool = True


def repo_now(repo: Repo) -> RepoNow:
    return RepoNow(repo.branch(), tuple(repo.unmerged_paths()), readiness.identity_known(repo))


class Seen:
    """`readiness`'s probe over the facts a view already gathered: the work tree taken once
    through the kept index (so never "still changing"), the review and verify records as read."""

    def __init__(
        self, repo: Repo, s: SessionFacts, r: reviews.ReviewFacts, busy: str | None, now: RepoNow
    ) -> None:
        self.repo, self.s, self.r, self._busy, self.now = repo, s, r, busy, now
        self.base, self.root = s.baseline, repo.root

    def busy(self) -> str | None:
        return self._busy

    def unmerged(self) -> list[str]:
        return list(self.now.unmerged)

    def head(self) -> str | None:
        return self.s.head

    def branch(self) -> str | None:
        return self.now.branch

    def settled(self) -> bool:
        return True

    def empty(self) -> bool | None:
        return None if self.s.change is None else self.s.change.empty

    def overlaps(self) -> list[Overlap]:
        if not self.s.pre_existing or self.s.intended is None:
            return []  # nothing was uncommitted before the session: nothing to overlap
        from plan_build.delivery.commitplan import splice

        return splice(self.repo, self.base, self.s.intended).overlaps

    def tree(self) -> str | None:
        return self.s.change.tree if self.s.change is not None else None

    def record(self) -> dict[str, Any] | None:
        from plan_build.delivery import verifyrecord

        return verifyrecord.last_record(self.repo, self.s.id)

    def approval(self) -> readiness.Approval:
        a = self.r.approval
        if self.r.problem or a is None or a.answer is None:
            raise PlanBuildError(
                self.r.problem or "the review state was not read",
                self.r.next or "plan-build review.doctor",
                code=ExitCode.BLOCKED,
            )
        return a.answer

    def identity_known(self) -> bool:
        return self.now.identity_known


def judged(
    repo: Repo, s: SessionFacts, r: reviews.ReviewFacts, busy: str | None, now: RepoNow
) -> tuple[readiness.Refusal, ...]:
    """Every refusal `commit` would make now (none for a committed session)."""
    if s.committed:
        return ()
    return tuple(readiness.refusals(Seen(repo, s, r, busy, now)))


# Which refusal's command `next` offers first: the repository's state, then the review, then
# verify (a session reviews its change before it verifies it); commit asks them in its order.
NEXT_FIRST = ("busy", "conflicts", "head", "branch", "settling", "empty", "overlap", "review")


def _order(kind: str) -> int:
    return NEXT_FIRST.index(kind) if kind in NEXT_FIRST else len(NEXT_FIRST)


def what_is_missing(
    s: SessionFacts,
    r: reviews.ReviewFacts,
    t: progress.TaskFacts,
    refused: tuple[readiness.Refusal, ...],
) -> tuple[tuple[str, ...], str]:
    """(`commit`'s refusals as the list says them; the one next command). A task in progress
    comes first for the next command, though `commit` does not ask about tasks."""
    if s.committed:
        return (), "plan-build plan (the session is committed: start a new one)"
    nexts: list[str] = []
    p = t.in_progress
    if p is not None and p.running is False:
        if p.wave:
            nexts.append("plan-build dispatch --wave (resumes the stopped wave)")
        else:
            nexts.append(f"plan-build dispatch {p.id} (resumes it)")
    elif p is not None and p.running:
        nexts.append(f"wait for the {'wave' if p.wave else 'dispatch'} of {p.id} to end")
    for refusal in sorted(refused, key=lambda x: _order(x.kind)):
        command = refusal.next
        if refusal.kind == "review" and r.status == "active" and r.next:
            command = r.next  # the round's own next step (decisions, a run, the approval)
        if command:
            nexts.append(command)
    if not refused:
        nexts.append(COMMIT)
    elif r.workflow is None and (r.approval is None or r.approval.workflow is None):
        nexts.append(NEW_REVIEW)  # nothing reviewed yet: a session starts with its plan
    return tuple(x.brief for x in refused), nexts[0] if nexts else NEW_REVIEW


__all__ = ["COMMIT", "NEW_REVIEW", "RepoNow", "Seen", "judged", "repo_now", "what_is_missing"]
