"""Where a round stands: what stands between it and its approval, and the ledger sync every
command shares. Read-only commands (`review.status`, `review.summary`) need only this, not the
reviewers that `rounds` runs, so it imports nothing that starts a process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from plan_build.review.ledger import Ledger
from plan_build.review.roundfiles import RoundRecord, load_round, sha256_file
from plan_build.review.runtime import ReviewContext
from plan_build.review.steps import RoundView, Step

TOKENS = {"plan": "ACCEPT | REJECT | DEFER", "implement": "FIX | REJECT | WONTFIX"}
PHASE_NAME = {"plan": "plan", "implement": "implementation"}


class Where(Protocol):
    """What judging a round needs of its context: paths as the user reads them, and the
    change as it is now (a ReviewContext; `status` passes the tree it already took)."""

    def rel(self, path: Path) -> str: ...

    def fingerprint(self) -> str: ...


def phase_round(phase: str, round: int) -> str:
    return f"{PHASE_NAME.get(phase, phase)} round {round}"


def sync_ledger(ctx: ReviewContext, view: RoundView) -> Ledger:
    """Bring the current round's ledger rows up to date (writes only when they changed)."""
    ledger = Ledger.load(view.wdir.ledger)
    if view.reviewed:
        ledger.sync(view.phase, view.round, view.entries(), ctx.now())
    if ledger.changed:
        view.wdir.path.mkdir(parents=True, exist_ok=True)
        ledger.save()
    return ledger


@dataclass(frozen=True)
class Problem:
    text: str
    waivable: bool = False  # approve may go ahead once the user confirms it on a terminal
    fix: str | None = None


def _unreviewed(ctx: Where, view: RoundView) -> Problem:
    if view.malformed is not None:
        return Problem(
            f"{ctx.rel(view.review_path)} is not a review ({view.malformed})",
            fix="run plan-build review to review the round again",
        )
    return Problem(
        f"{phase_round(view.phase, view.round)} has not been reviewed yet",
        fix="run plan-build review",
    )


def problems(ctx: Where, view: RoundView, record: RoundRecord | None) -> list[Problem]:
    """Why this round cannot be approved as it stands (empty: it can)."""
    out: list[Problem] = []
    if view.step == Step.WORKING:
        return [_unreviewed(ctx, view)]
    if view.step == Step.REVIEW:
        decide = (
            f"write 'Decision: {TOKENS[view.phase]}' under each finding id in "
            f"{ctx.rel(view.findings_path)}"
        )
        if not (view.responses and view.responses.strip()):
            where = ctx.rel(view.findings_path)
            out.append(
                Problem(f"no decisions are written yet ({where} is missing or empty)", fix=decide)
            )
        if view.undecided:
            ids = ", ".join(f.id for f in view.undecided)
            out.append(Problem(f"findings without a decision: {ids}", fix=decide))
        for f, d in view.unparsed:
            out.append(
                Problem(f"{f.id} is undecided: {d.describe(view.findings_path)}", fix=decide)
            )
    for f in view.findings:
        if view.token(f) != "DEFER":
            continue
        if f.severity == "LOW":
            out.append(Problem(f"{f.id} (low) is deferred: that needs your approval", True))
        else:
            out.append(
                Problem(
                    f"{f.id} is deferred, but only LOW findings may be deferred",
                    fix=f"decide {f.id} differently ({TOKENS[view.phase]}) in "
                    f"{ctx.rel(view.findings_path)}",
                )
            )
    if record is not None:
        for run in record.not_clean():
            text = f"{run.name} did not review this round ({run.status}: {run.reason})"
            out.append(Problem(text, True))
    return out


def stale(ctx: Where, record: RoundRecord | None) -> tuple[str | None, str | None, bool | None]:
    """(reviewed tree, current tree, stale) for an implementation round."""
    reviewed = record.reviewed_tree if record else None
    current = ctx.fingerprint()
    if reviewed is None:
        return None, current, None
    return reviewed, current, reviewed != current


REPEAT = "run plan-build review.repeat to review the change as it is now"


def short(tree: str | None) -> str:
    return tree[:12] if tree else "unknown"


def blocking(ctx: Where, view: RoundView, record: RoundRecord | None) -> list[Problem]:
    """Everything that stands between this round and its approval - the one list that
    `review.status`, the review commands and `review.approve` all use (empty: approvable)."""
    out = problems(ctx, view, record)
    if not view.reviewed:
        return out
    label = phase_round(view.phase, view.round)
    if view.phase == "implement":
        reviewed, current, moved = stale(ctx, record)
        if moved:
            out.append(
                Problem(
                    f"the change has moved since {label} reviewed it "
                    f"(reviewed {short(reviewed)}, now {short(current)})",
                    fix=REPEAT,
                )
            )
        elif reviewed is not None:
            marked = [f.id for f in view.findings if view.token(f) in ("FIX", "ACCEPT")]
            if marked:
                out.append(
                    Problem(
                        f"{', '.join(marked)} marked FIX, but the change has not moved since "
                        "this round reviewed it, so the fix is not in what was reviewed",
                        fix="apply the fixes, then "
                        + REPEAT.removeprefix("run ")
                        + " (or record a different decision)",
                    )
                )
    elif (
        record is not None
        and record.plan_sha256
        and sha256_file(view.wdir.plan) != record.plan_sha256
    ):
        out.append(
            Problem(
                f"{ctx.rel(view.wdir.plan)} changed since {label} reviewed it",
                fix="run plan-build review.repeat to review the plan as it is now",
            )
        )
    return out


def record_of(view: RoundView) -> RoundRecord | None:
    return load_round(view.wdir, view.phase, view.round)


__all__ = [
    "PHASE_NAME",
    "REPEAT",
    "TOKENS",
    "Problem",
    "Where",
    "blocking",
    "phase_round",
    "problems",
    "record_of",
    "short",
    "stale",
    "sync_ledger",
]
