"""The steps behind the `review.*` tasks. Each takes the process Session plus its flags,
prints human output on stderr (JSON on stdout) and raises PlanBuildError for every outcome a
user must act on; "blocked" outcomes use exit 6.

How a step reaches and locks its workflow is `access`'s, what it says about a round is
`messages`', the state changes are `transitions`'; a review round (`rounds`, with the
reviewers it starts) loads only when one runs, so the read-only steps stay light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plan_build.core import jsonout
from plan_build.core.context import Session
from plan_build.core.errors import usage
from plan_build.core.fsutil import atomic_write
from plan_build.review import ledger as ledger_mod
from plan_build.review import messages, report, transitions
from plan_build.review.access import context, locked, require, resolved
from plan_build.review.gate import blocking, phase_round, record_of, sync_ledger
from plan_build.review.layout import WorkflowDir, guard, new_id
from plan_build.review.ledger import Ledger
from plan_build.review.lock import held_by_other
from plan_build.review.resolution import Resolution, last_completed, record_owner
from plan_build.review.runtime import ReviewContext
from plan_build.review.steps import Step, inspect
from plan_build.review.workflowfile import Workflow, create, load, project_key, save

if TYPE_CHECKING:
    from plan_build.review.rounds import RoundResult

# A plan file's mode (rounds.FILE_MODE): rounds itself, with the reviewers it starts, loads only
# when a round runs, so read-only commands stay light.
FILE_MODE = 0o644


def run_round(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, focus: str | None
) -> RoundResult:
    from plan_build.review import rounds

    return rounds.run_round(ctx, wf, wdir, focus)


def require_codex(ctx: ReviewContext) -> None:
    from plan_build.review import rounds

    rounds.require_codex(ctx)


def _review_or_describe(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, focus: str | None
) -> None:
    if inspect(wf, wdir).step == Step.WORKING:
        messages.finish(ctx, run_round(ctx, wf, wdir, focus))
    else:
        messages.describe(ctx, wf, wdir)


# --- commands ------------------------------------------------------------------------------


def review_next(s: Session, *, workflow: str | None, focus: str | None) -> None:
    ctx, res, target = require(s, workflow, "nothing to review")
    transitions.require_active(target)
    with locked(ctx, res) as (wf, wdir):
        _review_or_describe(ctx, wf, wdir, focus)


def review_plan(s: Session, *, plan: str | None, workflow: str | None, focus: str | None) -> None:
    ctx = context(s, workflow)
    res = resolved(ctx, acting=True)
    if res.workflow is None:
        _create(ctx, plan, focus)
        return
    if res.workflow.phase != "plan":
        raise usage(
            f"workflow {res.workflow.id} is past planning "
            f"({phase_round(res.workflow.phase, res.workflow.round)})",
            "review the implementation with plan-build review.impl",
        )
    transitions.require_active(res.workflow)
    with locked(ctx, res) as (wf, wdir):
        if plan is not None:
            _replace_plan(ctx, wf, wdir, plan)
        _review_or_describe(ctx, wf, wdir, focus)


def _create(ctx: ReviewContext, plan: str | None, focus: str | None) -> None:
    from plan_build.review import plans

    require_codex(ctx)
    session = ctx.session()
    if plan is not None:
        source, recorded = plans.source_path(plan, ctx.cwd, ctx.root)
        data = plans.read_plan(source, plan)
    else:
        source = plans.native_plan(ctx.env, session)
        recorded = str(source)
        data = plans.read_plan(source, recorded)
    _refuse_secrets(ctx, data, plan or recorded)
    now = ctx.now()
    wdir = guard(WorkflowDir(ctx.root, new_id(now)))
    while wdir.path.exists():
        wdir = guard(WorkflowDir(ctx.root, new_id(now)))
    wdir.artifacts.mkdir(parents=True, exist_ok=True)
    atomic_write(wdir.plan, data, mode=FILE_MODE)
    ledger_mod.ensure(wdir.ledger)
    wf = create(wdir, now, focus or "")
    wf.plan_source_path = recorded
    if session is not None:
        wf.owner_session_id = session.session_id
        wf.owner_cwd = session.cwd
        wf.owner_project_key = project_key(session.cwd) if session.cwd else ""
    save(wdir, wf, now)  # last: a directory without workflow.json is not a workflow
    if session is not None:
        record_owner(wdir, session)
    ctx.console.say(f"Created workflow {wf.id} (plan from {recorded}).")
    created = Resolution(wf, wdir, session)
    with locked(ctx, created) as (wf, wdir):
        messages.finish(ctx, run_round(ctx, wf, wdir, focus))


def _replace_plan(ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, given: str) -> None:
    from plan_build.review import plans

    source, recorded = plans.source_path(given, ctx.cwd, ctx.root)
    data = plans.read_plan(source, given)
    _refuse_secrets(ctx, data, given)
    try:
        current: bytes | None = wdir.plan.read_bytes()
    except FileNotFoundError:
        current = None
    if current == data:
        if wf.plan_source_path != recorded:
            wf.plan_source_path = recorded
            save(wdir, wf, ctx.now())
        return
    view = inspect(wf, wdir)
    if view.reviewed:
        sync_ledger(ctx, view)
        wf.round += 1
        ctx.console.say(
            f"plan replaced: the new plan is reviewed in {phase_round('plan', wf.round)}"
        )
    atomic_write(wdir.plan, data, mode=FILE_MODE)
    wf.plan_source_path = recorded
    save(wdir, wf, ctx.now())


def _refuse_secrets(ctx: ReviewContext, data: bytes, shown: str) -> None:
    """The plan goes into artifacts/plan.md and Codex's prompt: no credentials (the same rule
    as dispatch's prompts), refused before anything is written or sent."""
    from plan_build.core import redact

    redact.refuse_secrets(
        data.decode("utf-8", "replace"),
        shown,
        ctx.env,
        fix="take the credential out of the plan (name the variable or secret store instead), "
        "then run plan-build review.plan again",
    )


def review_impl(
    s: Session, *, workflow: str | None, focus: str | None, guard: str | None = None
) -> None:
    ctx, res, target = require(
        s, workflow, "review.impl continues a workflow whose plan was reviewed"
    )
    transitions.require_active(target)
    with locked(ctx, res) as (current, wdir):
        wf = current
        if wf.phase == "plan":
            view = inspect(wf, wdir)
            if view.step != Step.APPROVAL:
                found = [p for p in blocking(ctx, view, record_of(view)) if not p.waivable]
                raise transitions.blocked(
                    f"workflow {wf.id} is in phase plan at step {view.step.value}; "
                    "review.impl moves on only from an approvable plan round",
                    found,
                )
            require_codex(ctx)
            wf = transitions.approve(ctx, wf, wdir, guard=guard)
        _review_or_describe(ctx, wf, wdir, focus)


def review_repeat(s: Session, *, workflow: str | None, focus: str | None) -> None:
    ctx, res, target = require(s, workflow, "nothing to repeat")
    transitions.require_active(target)
    with locked(ctx, res) as (current, wdir):
        require_codex(ctx)
        wf = transitions.repeat(ctx, current, wdir)
        messages.finish(ctx, run_round(ctx, wf, wdir, focus))


def review_approve(s: Session, *, workflow: str | None, guard: str | None = None) -> None:
    ctx, res, _ = require(s, workflow, "nothing to approve")
    with locked(ctx, res) as (wf, wdir):
        transitions.approve(ctx, wf, wdir, guard=guard)


def review_done(s: Session, *, workflow: str | None) -> None:
    ctx, res, target = require(s, workflow, "nothing to finish")
    if target.status == "completed":
        ctx.console.say(f"Workflow {target.id} is already completed.")
        return
    with locked(ctx, res) as (wf, wdir):
        transitions.done(ctx, wf, wdir)


def _report(ctx: ReviewContext, res: Resolution) -> report.Report:
    if res.wdir is None or res.workflow is None:
        raise ValueError("_report() needs a resolved workflow")
    other = held_by_other(res.wdir)
    if other is not None:
        wf = load(res.wdir)
        view = inspect(wf, res.wdir)
        return report.build(ctx, view, Ledger.load(res.wdir.ledger), synced=False)
    with locked(ctx, res) as (wf, wdir):
        view = inspect(wf, wdir)
        ledger = sync_ledger(ctx, view)
        return report.build(ctx, view, ledger)


def _print_json(s: Session, data: dict[str, Any]) -> None:
    jsonout.write(s.stdout, data)
    s.stdout.flush()


def review_status(s: Session, *, workflow: str | None, json: bool, summary: bool = False) -> None:
    ctx = context(s, workflow)
    res = resolved(ctx)
    if res.workflow is None:
        done = last_completed(ctx.root, res.session)
        if done is not None:  # shown until a new workflow starts
            res = Resolution(done, WorkflowDir(ctx.root, done.id), res.session)
    if res.workflow is None:
        if json:
            _print_json(s, report.empty_json())
        ctx.console.say("No active workflow found.")
        if res.orphans:
            ctx.console.say(
                f"  owned by ended Claude sessions: {', '.join(res.orphans)} "
                "(take one over with --workflow ID)"
            )
        return
    r = _report(ctx, res)
    if json:
        _print_json(s, report.as_json(ctx, r))
    elif summary:
        report.print_summary(r, ctx.console, ctx.env)
    else:
        report.print_status(ctx, r, ctx.console)
    if not r.view.wf.active and not json:
        ctx.console.say(
            f"Workflow {r.view.wf.id} is {r.view.wf.status}; "
            "plan-build review.plan starts a new one."
        )


def review_summary(s: Session, *, workflow: str | None, json: bool) -> None:
    review_status(s, workflow=workflow, json=json, summary=True)


def review_doctor(s: Session, *, json: bool) -> None:
    from plan_build.review import doctor

    result = doctor.run(s)
    if json:
        _print_json(s, result.as_json())
    else:
        doctor.print_report(result, s.console)


__all__ = [
    "review_approve",
    "review_doctor",
    "review_done",
    "review_impl",
    "review_next",
    "review_plan",
    "review_repeat",
    "review_status",
    "review_summary",
]
