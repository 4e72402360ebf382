"""Review tasks: `review` (the next review for the current workflow's phase) and
`review.plan`, `.impl`, `.repeat`, `.approve`, `.done`, `.status`, `.summary`, `.doctor`.

Thin wrappers: each builds the process Session and calls a step in plan_build.review.commands.
The workflow is found from the current Claude Code session; `--workflow ID` overrides that.
"""

from __future__ import annotations

from typing import Any

from invoke.collection import Collection

from plan_build.cli.strict import command
from plan_build.core.context import Session

WORKFLOW = "act on this workflow id instead of the current Claude session's workflow"
FOCUS = "extra focus for this round's review (the first review.plan also records it as the task)"
JSON = "print machine-readable JSON on stdout"


def session_guard(s: Session) -> str | None:
    """The guard the session's launch recorded ("sandbox" / "unguarded"), for an approval
    record's `confirmed_how`; None when there is no session or it predates the field."""
    from plan_build.core.errors import PlanBuildError
    from plan_build.delivery import baseline

    try:
        base = baseline.current(s.repo, s.env, allow_committed=True)
    except PlanBuildError:
        return None
    guard = getattr(base, "guard", None)
    return guard if isinstance(guard, str) else None


@command(default=True, help={"workflow": WORKFLOW, "focus": FOCUS})
def review(c: Any, workflow: str | None = None, focus: str | None = None) -> None:
    """Run the next review for the current workflow's phase, or say what it is waiting for."""
    from plan_build.review import commands

    commands.review_next(Session.from_process(), workflow=workflow, focus=focus)


@command(
    name="plan",
    help={
        "plan": "the plan file to review (default: the plan this Claude session wrote); "
        "replaces the workflow's plan.md",
        "workflow": WORKFLOW,
        "focus": FOCUS,
    },
)
def plan_(
    c: Any, plan: str | None = None, workflow: str | None = None, focus: str | None = None
) -> None:
    """Review the plan with Codex; starts a workflow when the session has none."""
    from plan_build.review import commands

    commands.review_plan(Session.from_process(), plan=plan, workflow=workflow, focus=focus)


@command(help={"workflow": WORKFLOW, "focus": FOCUS})
def impl(c: Any, workflow: str | None = None, focus: str | None = None) -> None:
    """Review the implementation with Codex and CodeRabbit against the approved plan.

    From a plan round that is ready for approval, this approves the plan first.
    """
    from plan_build.review import commands

    s = Session.from_process()
    commands.review_impl(s, workflow=workflow, focus=focus, guard=session_guard(s))


@command(help={"workflow": WORKFLOW, "focus": FOCUS})
def repeat(c: Any, workflow: str | None = None, focus: str | None = None) -> None:
    """Start the next round of the current phase and review again."""
    from plan_build.review import commands

    commands.review_repeat(Session.from_process(), workflow=workflow, focus=focus)


@command(help={"workflow": WORKFLOW})
def approve(c: Any, workflow: str | None = None) -> None:
    """Approve the current round: plan → implementation, or complete the workflow."""
    from plan_build.review import commands

    s = Session.from_process()
    commands.review_approve(s, workflow=workflow, guard=session_guard(s))


@command(help={"workflow": WORKFLOW})
def done(c: Any, workflow: str | None = None) -> None:
    """Mark the workflow completed without approving it."""
    from plan_build.review import commands

    commands.review_done(Session.from_process(), workflow=workflow)


@command(help={"workflow": WORKFLOW, "json": JSON})
def status(c: Any, workflow: str | None = None, json: bool = False) -> None:
    """Where the workflow stands: phase, round, step, files, counts, staleness."""
    from plan_build.review import commands

    commands.review_status(Session.from_process(), workflow=workflow, json=json)


@command(help={"workflow": WORKFLOW, "json": JSON})
def summary(c: Any, workflow: str | None = None, json: bool = False) -> None:
    """The current round's findings and decisions from the ledger."""
    from plan_build.review import commands

    commands.review_summary(Session.from_process(), workflow=workflow, json=json)


@command(help={"json": JSON})
def doctor(c: Any, json: bool = False) -> None:
    """Diagnose session and workflow resolution, tools, artifacts and locks (read-only)."""
    from plan_build.review import commands

    commands.review_doctor(Session.from_process(), json=json)


collection = Collection(
    "review", review, plan_, impl, repeat, approve, done, status, summary, doctor
)
