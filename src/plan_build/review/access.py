"""How a review command reaches its workflow: the step context, the workflow resolved for it
(with its warnings said once), the error when there is none, and the lock held while it acts.
Every `review.*` command, read-only or not, goes through here."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from plan_build.core import interrupts
from plan_build.core.context import Session
from plan_build.core.errors import PlanBuildError, usage
from plan_build.review.layout import WorkflowDir
from plan_build.review.lock import WorkflowLock
from plan_build.review.resolution import Resolution, claim, resolve
from plan_build.review.runtime import ReviewContext
from plan_build.review.workflowfile import Workflow, load


def context(s: Session, workflow: str | None) -> ReviewContext:
    return ReviewContext.build(s, workflow)


def resolved(ctx: ReviewContext, *, acting: bool = False) -> Resolution:
    """The workflow this command acts on (maybe none); skipped folders and notes are said.
    `acting` commands stop (exit 3) on a broken folder this session owns (resolution)."""
    res = resolve(ctx.root, ctx.session(), ctx.env, ctx.explicit, acting=acting)
    for skipped in res.skipped:
        ctx.console.say(f"warning: {skipped.warning()}")
    if res.note:
        ctx.console.say(f"note: {res.note}")
    return res


def none_found(ctx: ReviewContext, res: Resolution, what: str) -> PlanBuildError:
    hint = "start one with: plan-build review.plan (add --plan PATH to name the plan)"
    if res.orphans:
        hint = (
            f"workflows owned by ended Claude sessions: {', '.join(res.orphans)} "
            "(take one over with --workflow ID), or " + hint
        )
    who = f" for Claude session {res.session.session_id}" if res.session else ""
    return usage(f"no active review workflow{who} in {ctx.root}; {what}", hint)


def require(
    s: Session, workflow: str | None, nothing: str
) -> tuple[ReviewContext, Resolution, Workflow]:
    """The context and the resolved workflow a command acts on; an error when there is none."""
    ctx = context(s, workflow)
    res = resolved(ctx, acting=True)
    if res.workflow is None:
        raise none_found(ctx, res, nothing)
    return ctx, res, res.workflow


@contextlib.contextmanager
def locked(ctx: ReviewContext, res: Resolution) -> Iterator[tuple[Workflow, WorkflowDir]]:
    """Hold the workflow's lock; re-read it, and claim it for the session if it should be."""
    if res.wdir is None or res.workflow is None:
        raise ValueError("locked() needs a resolved workflow")
    wdir = res.wdir
    with interrupts.stopping(), WorkflowLock(wdir, res.workflow.owner_cwd):
        wf = load(wdir)
        session = ctx.session()
        if res.claim and session is not None:
            wf = claim(wdir, session, ctx.now())
            ctx.console.say(f"workflow {wf.id} now belongs to Claude session {session.session_id}")
        yield wf, wdir


__all__ = ["context", "locked", "none_found", "require", "resolved"]
