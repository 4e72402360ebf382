"""Transitions step by step (no agents): approval gates and their recorded confirmations,
forward-only rounds, and the ledger synced before every move so no round freezes at OPEN."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest

from plan_build.core import config, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.resources import CHECKOUT_ROOT
from plan_build.core.ui import Console
from plan_build.review import transitions
from plan_build.review.layout import WorkflowDir
from plan_build.review.ledger import Ledger
from plan_build.review.roundfiles import ReviewerRun, RoundRecord, save_round, sha256_file
from plan_build.review.runtime import ReviewContext
from plan_build.review.workflowfile import Workflow, create, load, save
from tests.support.interaction import ScriptedInteraction
from tests.support.reviewkit import CLEAN

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
WF_ID = "20261130-120000-abcdef"


def make_ctx(
    repo: Path, answers: list[str] | None = None, interactive: bool = True
) -> ReviewContext:
    return ReviewContext(
        repo=gitrepo.discover(repo),
        root=repo,
        cwd=repo,
        env={"HOME": str(Path.home())},
        console=Console(stream=io.StringIO(), fancy=False),
        ui=ScriptedInteraction(answers=list(answers or []), interactive=interactive),
        templates=CHECKOUT_ROOT / "templates",
        config=config.load(repo),
        clock=lambda: NOW,
        find_session=lambda: None,
        parents=lambda: [],  # no agent above, wherever the suite runs
    )


def workflow(repo: Path, phase: str = "plan", rnd: int = 1) -> tuple[Workflow, WorkflowDir]:
    wdir = WorkflowDir(repo, WF_ID)
    wdir.artifacts.mkdir(parents=True)
    wf = create(wdir, NOW, "task")
    wf.phase, wf.round = phase, rnd
    wdir.plan.write_text("# plan\n")
    save(wdir, wf, NOW)
    return wf, wdir


def reviewed(
    wdir: WorkflowDir,
    phase: str,
    rnd: int,
    review: str,
    decisions: str | None,
    *,
    tree: str | None = None,
    rabbit: str = "ok",
) -> None:
    wdir.review(phase, rnd).write_text(review)
    if decisions is not None:
        wdir.findings(phase, rnd).write_text(decisions)
    record = RoundRecord(
        phase, rnd, "2026-11-30T11:00:00Z", reviewed_tree=tree, plan_sha256=sha256_file(wdir.plan)
    )
    record.reviewers["codex"] = ReviewerRun("codex", "ok")
    if phase == "implement":
        record.reviewers["coderabbit"] = ReviewerRun(
            "coderabbit", rabbit, None if rabbit == "ok" else "rate limited (429)"
        )
    save_round(wdir, record)


def test_a_deferred_low_finding_is_approved_on_the_terminal_and_recorded(repo: Path) -> None:
    wf, wdir = workflow(repo)
    reviewed(
        wdir,
        "plan",
        1,
        "[HIGH-1] a\n[LOW-1] b\n",
        "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: DEFER\n",
    )
    ctx = make_ctx(repo, answers=["y"])

    transitions.approve(ctx, wf, wdir)

    assert ctx.ui.asked == ["Approve anyway, recording these in the approval record?"]  # type: ignore[attr-defined]
    record = json.loads(wdir.approval("plan", 1).read_text())
    assert record["deferred"] == [
        {"id": "LOW-1", "severity": "LOW", "reviewer": "codex", "finding": "b"}
    ]
    assert record["confirmed_on_terminal"] is True
    assert (load(wdir).phase, load(wdir).round) == ("implement", 1)


def test_saying_no_leaves_everything_as_it_was(repo: Path) -> None:
    wf, wdir = workflow(repo)
    reviewed(wdir, "plan", 1, "[LOW-1] b\n", "### LOW-1\nDecision: DEFER\n")
    with pytest.raises(PlanBuildError) as err:
        transitions.approve(make_ctx(repo, answers=["n"]), wf, wdir)
    assert err.value.code == ExitCode.APPROVAL
    assert load(wdir).phase == "plan"
    assert not wdir.approval("plan", 1).exists()


def test_without_a_terminal_the_gate_stops_with_exit_4(repo: Path) -> None:
    wf, wdir = workflow(repo)
    reviewed(wdir, "plan", 1, "[LOW-1] b\n", "### LOW-1\nDecision: DEFER\n")
    with pytest.raises(PlanBuildError) as err:
        transitions.approve(make_ctx(repo, interactive=False), wf, wdir)
    assert err.value.code == ExitCode.APPROVAL


def test_a_skipped_reviewer_is_waived_only_with_confirmation(repo: Path) -> None:
    wf, wdir = workflow(repo, "implement")
    ctx = make_ctx(repo, answers=["y"])
    tree = ctx.fingerprint()
    reviewed(wdir, "implement", 1, CLEAN, "Nothing.\n", tree=tree, rabbit="skipped")

    transitions.approve(ctx, wf, wdir)

    record = json.loads(wdir.approval("implement", 1).read_text())
    assert record["waived"] == [
        {"reviewer": "coderabbit", "status": "skipped", "reason": "rate limited (429)"}
    ]
    assert record["reviewed_tree"] == tree
    assert load(wdir).status == "completed"


def test_a_plan_edited_after_its_review_cannot_be_approved(repo: Path) -> None:
    wf, wdir = workflow(repo)
    reviewed(wdir, "plan", 1, CLEAN, "Nothing to decide.\n")
    wdir.plan.write_text("# plan, edited by hand\n")
    with pytest.raises(PlanBuildError) as err:
        transitions.approve(make_ctx(repo), wf, wdir)
    assert err.value.code == ExitCode.BLOCKED
    assert "plan.md changed since plan round 1 reviewed it" in str(err.value)
    assert "review.repeat" in str(err.value)


def test_repeat_needs_every_decision_first(repo: Path) -> None:
    wf, wdir = workflow(repo)
    reviewed(wdir, "plan", 1, "[HIGH-1] a\n", None)
    with pytest.raises(PlanBuildError) as err:
        transitions.repeat(make_ctx(repo), wf, wdir)
    assert err.value.code == ExitCode.BLOCKED
    assert "plan round 1 is at step review" in str(err.value)
    assert load(wdir).round == 1


def rows(wdir: WorkflowDir, phase: str, rnd: int) -> list[tuple[str, str]]:
    return [
        (r.get("finding_id"), r.get("decision")) for r in Ledger.load(wdir.ledger).rows(phase, rnd)
    ]


def test_repeat_syncs_the_round_it_leaves(repo: Path) -> None:
    # codex-review leaves these rows OPEN forever when decisions are written and the user
    # goes straight to __repeat.
    wf, wdir = workflow(repo)
    reviewed(wdir, "plan", 1, "[HIGH-1] a\n", "### HIGH-1\nDecision: ACCEPT\n")
    transitions.repeat(make_ctx(repo), wf, wdir)
    assert rows(wdir, "plan", 1) == [("HIGH-1", "ACCEPT")]
    assert load(wdir).round == 2
    assert wdir.review("plan", 1).read_text() == "[HIGH-1] a\n"


def test_done_syncs_the_round_and_completes_without_an_approval(repo: Path) -> None:
    wf, wdir = workflow(repo)
    reviewed(wdir, "plan", 1, "[HIGH-1] a\n", "### HIGH-1\nDecision: REJECT\n")
    transitions.done(make_ctx(repo), wf, wdir)
    assert rows(wdir, "plan", 1) == [("HIGH-1", "REJECT")]
    assert load(wdir).status == "completed"
    assert not wdir.approval("plan", 1).exists()


def test_a_completed_workflow_cannot_be_approved_again(repo: Path) -> None:
    wf, wdir = workflow(repo)
    wf.status = "completed"
    with pytest.raises(PlanBuildError, match="is completed"):
        transitions.approve(make_ctx(repo), wf, wdir)
