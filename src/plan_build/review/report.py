"""What `review.status` and `review.summary` show (stderr) and print as JSON (stdout).

The JSON is a stable interface (extend, never rename): `workflow`, `phase`, `round`, `step`,
`status`, `counts` (`{severity: {total, fix, no_change, open}}`), `findings` (one object per
ledger row of the round, keyed by the ledger's column names), `reviewed_tree`, `current_tree`
and `stale` (implementation rounds), plus `task`, `owner_session`, `owner_cwd`,
`plan_source`, `files`, `reviewers` and `blocking`; `approval` (a completed workflow:
`{approved, reason}`, approved only with plan-build's protected twin, review/twins.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plan_build.core import codexusage
from plan_build.core.ui import Console, printable
from plan_build.review import twins
from plan_build.review.findings import SEVERITIES
from plan_build.review.gate import Problem, phase_round, record_of, stale
from plan_build.review.gate import blocking as blocking_list
from plan_build.review.ledger import Counts, Ledger, Row, counts
from plan_build.review.roundfiles import RoundRecord, load_approval
from plan_build.review.runtime import ReviewContext
from plan_build.review.steps import RoundView


@dataclass
class Report:
    view: RoundView
    rows: list[Row]
    counts: dict[str, Counts]
    record: RoundRecord | None
    reviewed_tree: str | None = None
    current_tree: str | None = None
    stale: bool | None = None
    blocking: list[Problem] = field(default_factory=list)
    synced: bool = True  # False when another process held the lock
    approval: tuple[bool, str] | None = None  # a completed workflow: (approved, why)


def build(ctx: ReviewContext, view: RoundView, ledger: Ledger, synced: bool = True) -> Report:
    ids = {(f.reviewer, f.id) for f in view.findings}
    rows = [
        r
        for r in ledger.rows(view.phase, view.round)
        if (r.get("reviewer"), r.get("finding_id")) in ids
    ]
    record = record_of(view)
    report = Report(view, rows, counts(rows), record, synced=synced)
    if view.phase == "implement" and view.reviewed:
        report.reviewed_tree, report.current_tree, report.stale = stale(ctx, record)
    if view.wf.active:
        report.blocking = blocking_list(ctx, view, record)
    else:
        report.approval = _approval(ctx, view)
    return report


def _approval(ctx: ReviewContext, view: RoundView) -> tuple[bool, str] | None:
    """Whether a completed workflow's final round was approved by plan-build review.approve."""
    wf = view.wf
    if wf.status != "completed":
        return None
    if wf.phase != "implement" or load_approval(view.wdir, wf.phase, wf.round) is None:
        return False, "completed without plan-build's approval of an implementation round"
    forged = twins.check(ctx.repo, view.wdir, wf.phase, wf.round)
    if forged is not None:
        return False, forged
    return True, f"implementation round {wf.round} approved with plan-build review.approve"


def as_json(ctx: ReviewContext, r: Report) -> dict[str, Any]:
    wf, view = r.view.wf, r.view
    reviewers = {}
    if r.record is not None:
        reviewers = {
            name: {
                "status": run.status,
                "reason": run.reason,
                "seconds": run.seconds,
                "exit_code": run.exit_code,
                "usage": run.usage_sum,  # Codex's tokens (ADR 0175); null: not a Codex run
            }
            for name, run in r.record.reviewers.items()
        }
    return {
        "workflow": wf.id,
        "task": wf.task,
        "phase": wf.phase,
        "round": wf.round,
        "step": view.step.value,
        "status": wf.status,
        "owner_session": wf.owner_session_id or None,
        "owner_cwd": wf.owner_cwd or None,
        "plan_source": wf.plan_source_path or None,
        "files": {
            "review": ctx.rel(view.review_path),
            "findings": ctx.rel(view.findings_path),
            "ledger": ctx.rel(view.wdir.ledger),
            "plan": ctx.rel(view.wdir.plan),
        },
        "counts": {sev.lower(): r.counts[sev].as_json() for sev in SEVERITIES},
        "findings": _json_rows(ctx, r),
        "reviewers": reviewers,
        "reviewed_tree": r.reviewed_tree,
        "current_tree": r.current_tree,
        "stale": r.stale,
        "blocking": [p.text for p in r.blocking],
        "synced": r.synced,
        "approval": (
            None if r.approval is None else {"approved": r.approval[0], "reason": r.approval[1]}
        ),
    }


def _json_rows(ctx: ReviewContext, r: Report) -> list[dict[str, Any]]:
    rows = [row.as_json() for row in r.rows]
    texts = _withheld([str(row.get("finding") or "") for row in rows], ctx.env)
    for row, text in zip(rows, texts, strict=True):
        if row.get("finding"):
            row["finding"] = text
    return rows


def empty_json() -> dict[str, Any]:
    """What `as_json` prints when there is no workflow: every key, null where unknown."""
    return {
        "workflow": None,
        "task": None,
        "phase": None,
        "round": None,
        "step": None,
        "status": None,
        "owner_session": None,
        "owner_cwd": None,
        "plan_source": None,
        "files": None,
        "counts": {sev.lower(): Counts().as_json() for sev in SEVERITIES},
        "findings": [],
        "reviewers": None,
        "reviewed_tree": None,
        "current_tree": None,
        "stale": None,
        "blocking": [],
        "synced": None,
        "approval": None,
    }


def _freshness(r: Report) -> str | None:
    if r.view.phase != "implement" or not r.view.reviewed:
        return None
    if r.stale is None:
        return "unknown (this round was not reviewed by plan-build)"
    if r.stale:
        return (
            f"STALE: the change moved since this round reviewed it "
            f"(reviewed {(r.reviewed_tree or '')[:12]}, now {(r.current_tree or '')[:12]})"
        )
    return f"current (tree {(r.reviewed_tree or '')[:12]})"


def print_status(ctx: ReviewContext, r: Report, console: Console) -> None:
    wf, view = r.view.wf, r.view
    pairs = [
        ("Workflow", wf.id),
        ("Task", printable(wf.task) or "(unspecified task)"),
        ("Phase", wf.phase),
        ("Round", str(wf.round)),
        ("Step", view.step.value),
        ("Status", wf.status),
        ("Owner session", wf.owner_session_id or "(unowned)"),
        ("Owner cwd", wf.owner_cwd or "(unowned)"),
        ("Plan source", wf.plan_source_path or "(none recorded)"),
        ("Review file", ctx.rel(view.review_path)),
        ("Findings file", ctx.rel(view.findings_path)),
        ("Decisions ledger", ctx.rel(view.wdir.ledger)),
    ]
    if r.record is not None:
        for name, run in r.record.reviewers.items():
            detail = (
                "reviewed"
                if run.clean
                else f"{run.status}: {_withheld([str(run.reason)], ctx.env)[0]}"
            )
            if run.usage_sum is not None:
                detail += f" · {codexusage.short_sum(codexusage.sum_from_json(run.usage_sum))}"
            pairs.append((name.capitalize() if name != "coderabbit" else "CodeRabbit", detail))
    fresh = _freshness(r)
    if fresh:
        pairs.append(("Change", fresh))
    if r.approval is not None:
        pairs.append(("Approval", ("" if r.approval[0] else "NOT APPROVED: ") + r.approval[1]))
    for label, value in pairs:
        console.say(f"{label + ':':<18}{value}")
    c = r.counts
    console.say("Counts: " + " ".join(f"{sev.lower()}={c[sev].total}" for sev in SEVERITIES))
    if not r.synced:
        console.say("note: a review is running; the ledger was not synced")
    if r.blocking:
        console.say(f"Before {phase_round(wf.phase, wf.round)} can be approved:")
        for p in r.blocking:
            console.say(f"  - {p.text}")


def _withheld(texts: list[str], env: dict[str, str] | None) -> list[str]:
    """The texts with whatever looks like a credential withheld (core.redact, one scan)."""
    from plan_build.core import redact

    return redact.clean_many(texts, env or {})


def print_summary(r: Report, console: Console, env: dict[str, str] | None = None) -> None:
    wf = r.view.wf
    for label, value in (
        ("Workflow", wf.id),
        ("Phase", wf.phase),
        ("Round", str(wf.round)),
        ("Owner session", wf.owner_session_id or "(unowned)"),
        ("Owner cwd", wf.owner_cwd or "(unowned)"),
        ("Plan source", wf.plan_source_path or "(none recorded)"),
    ):
        console.say(f"{label + ':':<15}{value}")
    for sev in SEVERITIES:
        c = r.counts[sev]
        console.say(
            f"{sev.capitalize()}: {c.total} total, {c.fix} fix, {c.no_change} reject, {c.open} open"
        )
    if not r.rows:
        console.say("No findings recorded for this round.")
    else:
        console.say()
        texts = _withheld([str(row.get("finding") or "") for row in r.rows], env)
        for row, text in zip(r.rows, texts, strict=True):
            console.say(
                f"{row.get('finding_id')} {row.get('severity')} decision={row.get('decision')} "
                f"outcome={row.get('outcome')} selected={row.get('selected')} "
                f"({row.get('reviewer')})"
            )
            console.say(f"    {text}")
    for f, d in r.view.unparsed:
        console.say(f"note: {f.id} is undecided: {d.describe(r.view.findings_path)}")
    fresh = _freshness(r)
    if fresh:
        console.say(f"Change: {fresh}")
    if not r.synced:
        console.say("note: a review is running; the ledger was not synced")


__all__ = ["Report", "as_json", "build", "empty_json", "print_status", "print_summary"]
