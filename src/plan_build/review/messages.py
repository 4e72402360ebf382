"""What the review commands tell the user about a round (stderr): the verdict once a review
finished, where a round that is past `working` stands, and what stands before its approval
with the command to run next. Saying only: the state changes are `transitions`'."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plan_build.core.errors import usage
from plan_build.core.interact import next_command
from plan_build.review import transitions
from plan_build.review.gate import Problem, phase_round, sync_ledger
from plan_build.review.layout import WorkflowDir
from plan_build.review.runtime import ReviewContext
from plan_build.review.steps import Step, inspect
from plan_build.review.workflowfile import Workflow

if TYPE_CHECKING:
    from plan_build.review.rounds import RoundResult


def say_blocking(ctx: ReviewContext, what: str, found: list[Problem]) -> None:
    """What stands before approval, and what to do next (the answer, not a failure)."""
    ctx.console.say(f"{what}:")
    for p in found:
        ctx.console.say(f"  - {p.text}")
    fixes: list[str] = []
    for p in found:
        if p.fix and p.fix not in fixes:
            fixes.append(p.fix)
    if fixes:
        ctx.console.say(f"next: {'; '.join(fixes)}")


def finish(ctx: ReviewContext, result: RoundResult) -> None:
    """The round's verdict, from what the reviewers returned. A round in which every reviewer
    reviewed exits 0, with or without findings (ADR 0046); one in which a reviewer did not
    review exits 6."""
    view = result.view
    label = phase_round(view.phase, view.round)
    found = view.findings
    if found:
        n = len(found)
        ctx.console.say(f"{label} finished with {n} finding{'s' if n != 1 else ''}:")
        from plan_build.core import redact

        texts = redact.clean_many([f.text for f in found], ctx.env)
        for f, text in zip(found, texts, strict=True):
            ctx.console.say(f"  [{f.id}] {text} ({f.reviewer})")
    if result.early:
        ctx.console.say(
            f"  note: {ctx.rel(view.findings_path)} was written before this review finished; "
            "check its decisions against the findings above"
        )
    if result.record.not_clean():
        raise transitions.blocked(
            f"{label} is incomplete (a reviewer did not review)", result.problems
        )
    hard = [p for p in result.problems if not p.waivable]
    if hard:
        say_blocking(ctx, f"Before {label} can be approved", hard)
        return
    for p in result.problems:
        ctx.console.say(f"  note: {p.text}")
    if found:
        ctx.console.say(
            f"{label}: every finding has a decision. Approve it with plan-build review.approve"
        )
    else:
        ctx.console.say(
            f"{label}: no findings and every reviewer ran. "
            "Approve it with plan-build review.approve"
        )


def describe(ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir) -> None:
    """For a round that is past `working`: say where it stands and what comes next."""
    view = inspect(wf, wdir)
    sync_ledger(ctx, view)
    label = phase_round(wf.phase, wf.round)
    if view.step in (Step.COMPLETED, Step.CANCELLED):
        raise usage(
            f"workflow {wf.id} is {wf.status}", "start a new one with plan-build review.plan"
        )
    ctx.console.say(f"workflow {wf.id} · {label} · step {view.step.value}")
    ctx.console.say(f"  review    {ctx.rel(view.review_path)}")
    ctx.console.say(f"  findings  {ctx.rel(view.findings_path)}")
    found, _ = transitions.gate(ctx, view)
    hard = [p for p in found if not p.waivable]
    if hard:
        waiting = (
            "is waiting for decisions" if view.step == Step.REVIEW else "cannot be approved yet"
        )
        say_blocking(ctx, f"{label} {waiting}", hard)
        return
    for p in found:
        ctx.console.say(f"  note: {p.text}")
    if found:  # approving these needs the user: inside an agent, the user is asked
        ctx.console.say(
            f"{label} is decided; approving it needs the user's confirmation · "
            + next_command(ctx.env, transitions.approve_command(wf))
        )
        return
    ctx.console.say(
        f"{label} is decided: approve it with plan-build review.approve, "
        "or review again with plan-build review.repeat"
    )


__all__ = ["describe", "finish", "say_blocking"]
