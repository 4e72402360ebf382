"""Codex review rounds (`plan-build review.plan`) with the real `codex exec --sandbox read-only`
against the loopback Responses API: the prompt Codex sends to the model, the review plan-build
parses from the real `-o` file, the stdin route for long prompts, failures and the time limit."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from plan_build.core.resources import locate
from plan_build.dispatch import recipe as recipes
from plan_build.review import prompts
from tests.contract.conftest import Agents
from tests.contract.fakeapis import ResponsesApi
from tests.support.reviewkit import CLEAN, PLAN_REVIEW, WORKFLOWS, only_workflow

pytestmark = pytest.mark.contract

PLAN = "# Add pagination\n\n1. Add `limit` to GET /audit.\n2. Test it.\n"
FOCUS = "Check the rollback"


@pytest.fixture
def project(repo: Path, agents: Agents, codex_api: ResponsesApi) -> Path:
    """A repository with a plan file beside it; Codex answers from the loopback API."""
    (repo.parent / "plan.md").write_text(PLAN)
    return repo


def expected_prompt(project: Path, wf: Path, plan: str, *, strict: bool = False) -> str:
    """The plan-round prompt as plan-build renders it for this workflow."""
    context = prompts.PromptContext(
        project_id=prompts.project_id(project),
        workflow=wf.name,
        phase="plan",
        round=1,
        task=FOCUS,
        plan=plan,
        focus=FOCUS,
    )
    return prompts.build(locate(dict(os.environ)).templates, context, strict=strict)


def test_a_plan_round_sends_the_rendered_prompt_and_records_codexs_findings(
    cli: Any, project: Path, codex_api: ResponsesApi
) -> None:
    codex_api.reply = PLAN_REVIEW
    r = cli("review.plan", "--plan", "../plan.md", "--focus", FOCUS, cwd=project)

    assert r.code == 0, r.stderr  # reviewed; the findings wait for decisions (ADR 0046)
    assert "codex       2 findings (1 high, 1 low)" in r.stderr
    wf = only_workflow(project)
    [turn] = codex_api.turns()
    assert codex_api.last_user_text() == expected_prompt(project, wf, PLAN)
    assert turn.body["model"] == recipes.RECIPE.role(recipes.REVIEWER).model
    assert codex_api.turn_metadata()["sandbox_mode"] == "read-only"
    # what Codex wrote with -o became the round's review, and its tags the ledger's rows
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == PLAN_REVIEW
    rows = [line.split("\t") for line in (wf / "decisions.tsv").read_text().splitlines()[3:]]
    assert [(row[3], row[4], row[6]) for row in rows] == [
        ("codex", "HIGH-1", "The plan has no rollback step."),
        ("codex", "LOW-1", "Step 2 says 'endpont'."),
    ]
    assert not (wf / ".lock").exists()  # the -o file lived in the lock and went with it
    status = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert (status["phase"], status["round"]) == ("plan", 1)


def test_decisions_written_while_codex_reviews_never_make_the_round_clean(
    cli: Any, project: Path, codex_api: ResponsesApi
) -> None:
    """Issue 12 item 5: a findings file written while the real Codex turn is still open (Claude
    backgrounded the review and carried on) does not decide the round's verdict."""

    def decide_meanwhile() -> None:
        [wf] = (project / WORKFLOWS).iterdir()
        (wf / "artifacts" / "plan-findings-r1.md").write_text("### HIGH-1\nDecision: ACCEPT\n")

    codex_api.reply = PLAN_REVIEW
    codex_api.before_reply = decide_meanwhile

    r = cli("review.plan", "--plan", "../plan.md", "--focus", FOCUS, cwd=project)

    assert r.code == 0, r.stderr
    assert "no findings and every reviewer ran" not in r.stderr
    assert "plan round 1 finished with 2 findings" in r.stderr
    assert "plan-findings-r1.md was written before this review finished" in r.stderr
    assert "findings without a decision: LOW-1" in r.stderr
    status = json.loads(cli("review.status", "--json", cwd=project).stdout)
    approve = cli("review.approve", cwd=project)
    assert approve.code == 6
    assert status["blocking"] == ["findings without a decision: LOW-1"]
    assert "findings without a decision: LOW-1" in approve.stderr


def test_a_prompt_too_long_for_one_argument_reaches_codex_through_stdin(
    cli: Any, project: Path, codex_api: ResponsesApi
) -> None:
    plan = PLAN + "".join(f"- detail line {n:06d} " + "x" * 80 + "\n" for n in range(1400))
    plan += "END OF THE LONG PLAN\n"
    (project.parent / "plan.md").write_text(plan)
    codex_api.reply = CLEAN

    r = cli("review.plan", "--plan", "../plan.md", "--focus", FOCUS, cwd=project)

    assert r.code == 0, r.stderr
    wf = only_workflow(project)
    sent = codex_api.last_user_text()
    assert len(sent.encode()) > 100_000
    assert sent == expected_prompt(project, wf, plan)


def test_an_answer_that_is_not_a_review_is_asked_again_then_fails_the_round(
    cli: Any, project: Path, codex_api: ResponsesApi
) -> None:
    codex_api.reply = "Looks fine to me."

    r = cli("review.plan", "--plan", "../plan.md", "--focus", FOCUS, cwd=project)

    assert r.code == 6, r.stderr
    assert "the round stays unreviewed and no review file was written" in r.stderr
    assert "asking once more" in r.stderr
    assert "Codex's answer is not a review" in r.stderr
    wf = only_workflow(project)
    first, second = (codex_api.last_user_text(n) for n in (0, 1))
    assert first == expected_prompt(project, wf, PLAN)
    assert second == expected_prompt(project, wf, PLAN, strict=True)
    assert not (wf / "artifacts" / "plan-review-r1.md").exists()


def test_a_refused_turn_is_a_skipped_review_not_an_artifact(
    cli: Any, project: Path, codex_api: ResponsesApi
) -> None:
    codex_api.scenario = "unauthorized"

    r = cli("review.plan", "--plan", "../plan.md", "--focus", FOCUS, cwd=project)

    assert r.code == 6, r.stderr
    assert "the round stays unreviewed and no review file was written" in r.stderr
    assert "codex       skipped: authentication failed" in r.stderr
    assert "401 Unauthorized" in r.stderr
    wf = only_workflow(project)
    assert not (wf / "artifacts" / "plan-review-r1.md").exists()


def test_codex_waiting_on_a_silent_api_is_stopped_at_the_review_time_limit(
    cli: Any, project: Path, codex_api: ResponsesApi
) -> None:
    codex_api.scenario = "hang"

    r = cli(
        "review.plan",
        "--plan",
        "../plan.md",
        "--focus",
        FOCUS,
        cwd=project,
        env={"CODEX_CALL_TIMEOUT_SEC": "4"},
    )

    leftovers = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(
            "codex-last-message.md" in part and str(project) in part
            for part in (p.info["cmdline"] or [])
        )
    ]
    assert leftovers == []
    assert r.code == 6, r.stderr
    assert "the round stays unreviewed and no review file was written" in r.stderr
    assert "codex       skipped: timed out after 4s" in r.stderr
    assert codex_api.turns()
    wf = only_workflow(project)
    assert not (wf / "artifacts" / "plan-review-r1.md").exists()
