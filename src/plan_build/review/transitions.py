"""Forward-only transitions: approve, repeat, done - each after syncing the current round's
ledger rows, so no round is left frozen with OPEN rows (codex-review does not sync first).

Approval is refused (exit 6) while any finding lacks a decision, while a CRITICAL, HIGH or
MEDIUM finding is deferred, when the plan or the change moved since the round reviewed it,
and - in the implementation phase - while findings are marked FIX in the very round being
approved (the fix has not been reviewed: apply it and repeat). Deferring LOW findings and
going ahead without a reviewer that was skipped need the user's confirmation on a terminal,
never inside an agent session (interact.require_person); both, and what was established about
the answer (core/confirmation.py), are written to the round's approval record, after its
protected twin (review/twins.py). Without a terminal the gate stops (exit 4); a run of the
session's broker never approves.
"""

from __future__ import annotations

from plan_build.core import confirmation
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.core.interact import require_person
from plan_build.review import twins
from plan_build.review.gate import (
    REPEAT,
    Problem,
    blocking,
    phase_round,
    problems,
    record_of,
    short,
    sync_ledger,
)
from plan_build.review.layout import WorkflowDir, stamp
from plan_build.review.roundfiles import (
    ApprovalRecord,
    approval_bytes,
    save_approval,
    sha256_file,
)
from plan_build.review.runtime import ReviewContext
from plan_build.review.steps import RoundView, Step, inspect
from plan_build.review.workflowfile import Workflow, save


def approve_command(wf: Workflow) -> str:
    """The approval the user runs in their own terminal, where no Claude session names the
    workflow: so it names it."""
    return f"plan-build review.approve --workflow {wf.id}"


def require_active(wf: Workflow) -> None:
    if not wf.active:
        raise usage(
            f"workflow {wf.id} is {wf.status}",
            "start a new workflow with plan-build review.plan",
        )


def blocked(what: str, found: list[Problem]) -> PlanBuildError:
    lines = "\n".join(f"  - {p.text}" for p in found)
    fixes: list[str] = []
    for p in found:
        if p.fix and p.fix not in fixes:
            fixes.append(p.fix)
    return PlanBuildError(
        f"{what}:\n{lines}",
        "; ".join(fixes) or "resolve the points above, then try again",
        code=ExitCode.BLOCKED,
    )


def gate(ctx: ReviewContext, view: RoundView) -> tuple[list[Problem], str | None]:
    """Everything that stands between this round and its approval (rounds.blocking, the list
    review.status shows too), and the tree an approval would be for."""
    record = record_of(view)
    found = blocking(ctx, view, record)
    tree = record.reviewed_tree if record is not None and view.phase == "implement" else None
    return found, tree


def approve(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, *, guard: str | None = None
) -> Workflow:
    """Approve the current round (caller holds the lock): plan → implement round 1, or
    implement → completed. `guard`: the session's guard as its launch recorded it, for the
    approval record's `confirmed_how`. A run of the session's broker (an agent's) is refused
    before anything is read; the protected twin is written before the approval file."""
    require_active(wf)
    label = phase_round(wf.phase, wf.round)
    twins.refuse_brokered(ctx.env, f"approving {label}", approve_command(wf))
    view = inspect(wf, wdir)
    sync_ledger(ctx, view)
    found, tree = gate(ctx, view)
    hard = [p for p in found if not p.waivable]
    if hard:
        raise blocked(f"{label} cannot be approved yet", hard)
    if wf.phase == "implement" and tree is None:
        ctx.console.say(
            f"note: {label} was not reviewed by plan-build, so the change it covered is "
            "unknown; the commit step will ask for a fresh review"
        )
    waivable = [p for p in found if p.waivable]
    answered = confirmation.NOT_ASKED
    if waivable:
        ctx.console.say(f"{label} is ready except for:")
        for p in waivable:
            ctx.console.say(f"  - {p.text}")
        require_person(
            ctx.env,
            what=f"approving {label} with these",
            command=approve_command(wf),
            parents=ctx.parents,
        )
        question = "Approve anyway, recording these in the approval record?"
        if not ctx.ui.confirm(question, default=False):
            raise PlanBuildError(
                f"{label} was not approved",
                "decide differently, or review again with review.repeat",
                code=ExitCode.APPROVAL,
            )
        answered = confirmation.ON_TERMINAL
    record = record_of(view)
    session = ctx.session()
    deferred = [
        {"id": f.id, "severity": f.severity, "reviewer": f.reviewer, "finding": f.text}
        for f in view.findings
        if view.token(f) == "DEFER"
    ]
    waived = [
        {"reviewer": r.name, "status": r.status, "reason": r.reason or ""}
        for r in (record.not_clean() if record else [])
    ]
    approval = ApprovalRecord(
        phase=wf.phase,
        round=wf.round,
        approved_at=stamp(ctx.now()),
        reviewed_tree=tree,
        plan_sha256=sha256_file(wdir.plan),
        session=session.session_id if session else None,
        deferred=deferred,
        waived=waived,
        confirmed_on_terminal=bool(waivable),
        confirmed_how=confirmation.how(
            answered=answered, state_dir=ctx.repo.state_dir, guard=guard
        ),
    )
    twins.write(ctx.repo, wdir, wf.phase, wf.round, approval=approval_bytes(approval), env=ctx.env)
    save_approval(wdir, approval)
    if wf.phase == "plan":
        wf.phase, wf.round = "implement", 1
        save(wdir, wf, ctx.now())
        ctx.console.say(f"Approved {label}. Phase advanced to implement (round 1).")
    else:
        wf.status = "completed"
        save(wdir, wf, ctx.now())
        ctx.console.say(f"Approved {label}. Workflow {wf.id} completed.")
    if deferred:
        ids = ", ".join(d["id"] for d in deferred)
        ctx.console.say(f"  deferred with your approval: {ids} (list them as known limitations)")
    return wf


def repeat(ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir) -> Workflow:
    """Move to the next round (caller holds the lock; the caller then reviews it)."""
    require_active(wf)
    view = inspect(wf, wdir)
    sync_ledger(ctx, view)
    if view.step != Step.APPROVAL:
        found = [p for p in problems(ctx, view, record_of(view)) if not p.waivable]
        raise blocked(
            f"{phase_round(wf.phase, wf.round)} is at step {view.step.value}; "
            "a new round starts only once every finding has a decision",
            found,
        )
    wf.round += 1
    save(wdir, wf, ctx.now())
    ctx.console.say(f"Starting {phase_round(wf.phase, wf.round)}.")
    return wf


def done(ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir) -> Workflow:
    view = inspect(wf, wdir)
    sync_ledger(ctx, view)
    wf.status = "completed"
    save(wdir, wf, ctx.now())
    ctx.console.say(f"Workflow {wf.id} marked completed (without approval).")
    return wf


__all__ = [
    "REPEAT",
    "approve",
    "approve_command",
    "blocked",
    "done",
    "gate",
    "repeat",
    "require_active",
    "short",
]
