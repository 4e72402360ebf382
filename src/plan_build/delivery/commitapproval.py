"""What a commit must have approved before HEAD moves, and the record of it.

The review gate (the current round's approval, for exactly this change), the user's
acceptance of suspected secrets an allowlist pragma silences, and the approval record
written before HEAD moves (`commit-approval.json`: what was confirmed at the terminal, how).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core import clock, fsutil
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.core.interact import Interaction
from plan_build.core.ui import Console
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery.commitplan import Plan
from plan_build.delivery.intended import display_path
from plan_build.delivery.readiness import Approval, review_verdict


def current_approval(repo: Repo) -> Approval:
    """What review says about the current change (the one interface commit has to review)."""
    from plan_build.review.approval import current_approval as ask

    return ask(repo)


def review_gate(repo: Repo, *, tree: str | None = None) -> tuple[bool, str]:
    """Whether review lets this change be committed, and why (`readiness.review_verdict`)."""
    return review_verdict(current_approval(repo), tree)


def accept_allowlisted(
    ui: Interaction, console: Console, record: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Ask the user (at the terminal; agents were refused earlier) to accept the suspected
    secrets that an allowlist pragma in the change silences. Returns what was accepted."""
    failed = {c.get("id") for c in record.get("checks", []) if c.get("status") == "fail"}
    if "secrets.allowlisted" not in failed:
        return []
    items = [i for i in record.get("allowlisted", []) if isinstance(i, dict)]
    console.say("  suspected secrets silenced by an allowlist pragma in the change:")
    for i in items[:50]:
        console.say(f"    {display_path(str(i.get('path')))}:{i.get('line')} ({i.get('type')})")
    if len(items) > 50:
        console.say(f"    … and {len(items) - 50} more")
    question = (
        "Accept the allowlisted finding(s) above as not secrets, recording that in the "
        "commit's approval record?"
    )
    if not ui.confirm(question, default=False):
        raise PlanBuildError(
            "the allowlisted suspected secrets were not accepted; nothing was committed",
            "take them out of the change (or keep the pragma and accept them), then run "
            "plan-build verify and plan-build commit again",
            code=ExitCode.APPROVAL,
        )
    return items


def approval_path(repo: Repo, session_id: str) -> Path:
    return baseline_mod.sessions_dir(repo) / session_id / "commit-approval.json"


def save_approval(
    repo: Repo,
    plan: Plan,
    record: Mapping[str, Any],
    review: str,
    accepted: list[dict[str, Any]],
    *,
    how: str,
) -> None:
    """The commit's approval record: what the user approved at the terminal, and which
    allowlisted findings they accepted. Written before HEAD moves."""
    base = plan.base
    fsutil.write_json(
        repo.in_state(approval_path(repo, base.id)),
        {
            "session": base.id,
            "approved_at": clock.stamp(),
            "branch": base.branch,
            "head": base.head,
            "tree": plan.change.tree,
            "commit_tree": plan.new_tree,
            "verified_at": record.get("when"),
            "review": review,
            "confirmed_on_terminal": True,
            "confirmed_how": how,
            "accepted_allowlisted": accepted,
        },
    )


__all__ = [
    "Approval",
    "accept_allowlisted",
    "approval_path",
    "current_approval",
    "review_gate",
    "save_approval",
]
