"""End-to-end review rounds: the real `plan-build` entry point, stub `codex` and `coderabbit`
on PATH, a Claude session file for this test process (an ancestor of every command run)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.gitcmd import git
from tests.support.reviewkit import (
    CLEAN,
    IMPL_REVIEW,
    OTHER_SESSION,
    PLAN,
    PLAN_REVIEW,
    SESSION_ID,
    WORKFLOWS,
    claude_session,
    codex_events,
    codex_failure,
    codex_rule,
    decide,
    only_workflow,
    rabbit_agent,
    rabbit_complete,
    rabbit_finding,
    start_plan_review,
    tree_bytes,
)


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    """A repository, a plan file next to it, and this test process as its Claude session."""
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    return repo


def to_implementation(cli, stubs, project: Path) -> Path:
    wf = start_plan_review(cli, stubs, project, CLEAN)
    r = cli("review.approve", cwd=project)
    assert r.code == 0, r.stderr
    return wf


# --- plan rounds ---------------------------------------------------------------------------


def test_plan_review_starts_a_workflow_owned_by_this_session(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_rule(PLAN_REVIEW))
    r = cli("review.plan", "--plan", "../plan.md", "--focus", "Check the rollback", cwd=project)

    assert r.code == 0, r.stderr  # reviewed: the findings wait for decisions (ADR 0046)
    wf = only_workflow(project)
    assert f"Created workflow {wf.name}" in r.stderr
    assert "codex       2 findings (1 high, 1 low)" in r.stderr
    assert "findings without a decision: HIGH-1, LOW-1" in r.stderr
    assert "Decision: ACCEPT | REJECT | DEFER" in r.stderr
    state = json.loads((wf / "workflow.json").read_text())
    assert state["task"] == "Check the rollback"
    assert (state["phase"], state["round"], state["status"]) == ("plan", 1, "active")
    assert state["owner_session_id"] == SESSION_ID
    assert state["owner_cwd"] == str(project)
    assert state["plan_source_path"] == str(project.parent / "plan.md")
    assert (wf / "artifacts" / "plan.md").read_text() == PLAN
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == PLAN_REVIEW
    ledger = (wf / "decisions.tsv").read_text().splitlines()
    assert ledger[3].split("\t")[:10] == [
        "plan",
        "plan",
        "1",
        "codex",
        "HIGH-1",
        "HIGH",
        "The plan has no rollback step.",
        "OPEN",
        "OPEN",
        "no",
    ]
    [call] = [c for c in stubs.calls("codex") if c["argv"][0] == "exec"]
    argv = call["argv"]
    assert argv[:5] == ["exec", "--sandbox", "read-only", "--json", "-o"]
    assert argv[5].endswith(".lock/codex-last-message.md")
    assert "1. Add `limit` to GET /audit." in argv[-1]
    assert "Check the rollback" in argv[-1]
    assert call["stdin_tty"] is False
    assert call["cwd"] == str(project)
    assert not (wf / ".lock").exists()


def test_decisions_then_approve_moves_to_implementation(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(
        wf,
        "plan",
        1,
        "### HIGH-1\nDecision: ACCEPT\nAdd a rollback.\n\n### LOW-1\nDecision: REJECT\n",
    )

    r = cli("review.approve", cwd=project)

    assert r.code == 0, r.stderr
    assert "Approved plan round 1. Phase advanced to implement (round 1)." in r.stderr
    state = json.loads((wf / "workflow.json").read_text())
    assert (state["phase"], state["round"]) == ("implement", 1)
    rows = [line.split("\t") for line in (wf / "decisions.tsv").read_text().splitlines()[3:]]
    assert [(r[4], r[7], r[8], r[9]) for r in rows] == [
        ("HIGH-1", "ACCEPT", "FIX", "yes"),
        ("LOW-1", "REJECT", "NO-CHANGE", "no"),
    ]
    approval = json.loads((wf / "artifacts" / "plan-approval-r1.json").read_text())
    assert approval["session"] == SESSION_ID


def test_a_clean_plan_round_gets_a_findings_note_and_can_be_approved(
    cli, stubs, project: Path
) -> None:
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 0, r.stderr
    assert "no findings and every reviewer ran" in r.stderr
    wf = only_workflow(project)
    assert "nothing to decide" in (wf / "artifacts" / "plan-findings-r1.md").read_text()
    r = cli("review.status", "--json", cwd=project)
    assert json.loads(r.stdout)["step"] == "approval"


def test_without_a_session_or_plan_flag_nothing_is_guessed(cli, stubs, repo: Path) -> None:
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.plan", cwd=repo)
    assert r.code == 2
    assert "there is no Claude Code session to take the plan from" in r.stderr
    assert "--plan PATH" in r.stderr
    assert not (repo / ".claude").exists()


def test_the_sessions_native_plan_is_the_default(
    cli, stubs, project: Path, private_home: Path
) -> None:
    plans = private_home / ".claude" / "plans"
    plans.mkdir(parents=True)
    mine = plans / "paginate-audit-log-zany-lightning.md"
    mine.write_text("# Native plan\n")
    (plans / "newer-but-another-sessions.md").write_text("# Not mine\n")
    (plans / "paginate-agent-helper.md").write_text("# agent scratch\n")
    key = "".join(c if c.isalnum() else "-" for c in str(project))
    transcript = private_home / ".claude" / "projects" / key / f"{SESSION_ID}.jsonl"
    transcript.parent.mkdir(parents=True)
    lines = [
        {"type": "user", "timestamp": "2026-11-30T10:00:00Z", "message": {"content": "plan it"}},
        {
            "type": "assistant",
            "timestamp": "2026-11-30T10:01:00Z",
            "message": {
                "content": [
                    {"type": "tool_use", "name": "Write", "input": {"file_path": str(mine)}},
                    {
                        "type": "tool_use",
                        "name": "Edit",
                        "input": {"file_path": str(project / "README.md")},
                    },
                ]
            },
        },
        {
            "type": "assistant",
            "timestamp": "2026-11-30T10:02:00Z",
            "message": {"content": "see ~/.claude/plans/paginate-agent-helper.md"},
        },
    ]
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    stubs.rule("codex", codex_rule(CLEAN))

    r = cli("review.plan", cwd=project)

    assert r.code == 0, r.stderr
    wf = only_workflow(project)
    assert (wf / "artifacts" / "plan.md").read_text() == "# Native plan\n"
    assert json.loads((wf / "workflow.json").read_text())["plan_source_path"] == str(mine)


def test_a_session_without_a_plan_in_its_transcript_fails_closed(
    cli, stubs, project: Path, private_home: Path
) -> None:
    plans = private_home / ".claude" / "plans"
    plans.mkdir(parents=True)
    (plans / "someone-elses.md").write_text("# other\n")
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.plan", cwd=project)
    assert r.code == 2
    assert f"no Claude plan file found for session {SESSION_ID}" in r.stderr
    assert not (project / ".claude").exists()


def test_canonical_plan_is_sticky_and_plan_flag_replaces_it_in_a_new_round(
    cli, stubs, project: Path
) -> None:
    wf = start_plan_review(cli, stubs, project)
    (project.parent / "plan.md").write_text(PLAN + "3. Changed later.\n")
    r = cli("review.plan", cwd=project)
    assert r.code == 0  # still waiting for decisions on round 1; plan.md untouched
    assert "is waiting for decisions" in r.stderr
    assert (wf / "artifacts" / "plan.md").read_text() == PLAN

    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert "the new plan is reviewed in plan round 2" in r.stderr
    assert (wf / "artifacts" / "plan.md").read_text().endswith("3. Changed later.\n")
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == PLAN_REVIEW
    assert (wf / "artifacts" / "plan-review-r2.md").exists()


def test_approval_waits_for_every_decision(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nWe will fix this.\n")
    before = tree_bytes(project)
    r = cli("review.approve", cwd=project)
    assert r.code == 6
    assert "plan round 1 cannot be approved yet" in r.stderr
    assert "findings without a decision: HIGH-1, LOW-1" in r.stderr
    assert tree_bytes(project) == before


def test_only_low_findings_may_be_deferred(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: DEFER\n### LOW-1\nDecision: REJECT\n")
    r = cli("review.approve", cwd=project)
    assert r.code == 6
    assert "HIGH-1 is deferred, but only LOW findings may be deferred" in r.stderr


def test_deferring_a_low_finding_inside_the_session_asks_for_the_user(
    cli, stubs, project: Path
) -> None:
    """This test process poses as the Claude session (an ancestor of the command), so the
    deferral is refused as an agent's, and the text tells Claude to ask the user."""
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: DEFER\n")
    r = cli("review.approve", cwd=project)
    assert r.code == 4
    assert "LOW-1 (low) is deferred: that needs your approval" in r.stderr
    assert "is Claude Code" in r.stderr
    assert f"ask the user to run `plan-build review.approve --workflow {wf.name}`" in r.stderr
    assert json.loads((wf / "workflow.json").read_text())["phase"] == "plan"
    assert not (wf / "artifacts" / "plan-approval-r1.json").exists()


def test_repeat_reviews_the_next_round_with_the_prior_findings(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: REJECT\n")
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.repeat", "--focus", "rollback only", cwd=project)
    assert r.code == 0, r.stderr
    assert "Starting plan round 2." in r.stderr
    prompt = [c for c in stubs.calls("codex") if c["argv"][0] == "exec"][-1]["argv"][-1]
    assert "## Findings from round 1" in prompt
    assert "- HIGH-1 (codex, decision ACCEPT): The plan has no rollback step." in prompt
    assert "rollback only" in prompt
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == PLAN_REVIEW
    assert json.loads((wf / "workflow.json").read_text())["round"] == 2


def test_impl_from_an_approvable_plan_round_advances_and_reviews(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: REJECT\n")
    (project / "app.py").write_text("def page(limit):\n    return limit\n")
    stubs.rule("codex", codex_rule(IMPL_REVIEW))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)

    r = cli("review.impl", cwd=project)

    assert "Phase advanced to implement (round 1)." in r.stderr
    assert r.code == 0, r.stderr
    assert (wf / "artifacts" / "implement-review-r1.md").exists()
    prompt = [c for c in stubs.calls("codex") if c["argv"][0] == "exec"][-1]["argv"][-1]
    assert "## The approved plan" in prompt
    assert "- `app.py`" in prompt
    record = json.loads((wf / "artifacts" / "implement-round-r1.json").read_text())
    assert len(record["reviewed_tree"]) == 40
    assert record["reviewers"]["coderabbit"]["status"] == "ok"
    [review] = [c for c in stubs.calls("coderabbit") if c["argv"][:2] == ["review", "--agent"]]
    assert review["argv"] == ["review", "--agent", "--uncommitted"]
    assert review["cwd"] == str(project)


def test_impl_refuses_a_plan_round_that_is_not_decided(cli, stubs, project: Path) -> None:
    start_plan_review(cli, stubs, project)
    r = cli("review.impl", cwd=project)
    assert r.code == 6
    assert "is in phase plan at step review" in r.stderr


# --- implementation rounds -----------------------------------------------------------------


def test_codex_and_coderabbit_findings_share_one_round(cli, stubs, project: Path) -> None:
    wf = to_implementation(cli, stubs, project)
    (project / "app.py").write_text("def page(limit):\n    return limit\n")
    stubs.rule("codex", codex_rule(IMPL_REVIEW))
    for rule in reversed(
        rabbit_agent(
            rabbit_finding("major", "app.py", "Missing bounds check\nlimit can be negative."),
            rabbit_finding("trivial", "app.py", "Add a docstring [HIGH-9] maybe"),
            rabbit_complete(2),
        )
    ):
        stubs.rule("coderabbit", rule)

    r = cli("review.impl", cwd=project)

    assert r.code == 0, r.stderr
    assert "coderabbit  2 findings (1 high, 1 low)" in r.stderr
    assert "implementation round 1 finished with 3 findings" in r.stderr
    review = (wf / "artifacts" / "implement-review-r1.md").read_text()
    assert review.startswith(IMPL_REVIEW)
    assert "- [HIGH-1] `app.py` Missing bounds check" in review
    assert "  > limit can be negative." in review
    assert "- [LOW-1] `app.py` Add a docstring (HIGH-9) maybe" in review
    rows = [line.split("\t") for line in (wf / "decisions.tsv").read_text().splitlines()[3:]]
    assert [(r[0], r[3], r[4]) for r in rows] == [
        ("implement", "codex", "MEDIUM-1"),
        ("implement", "coderabbit", "HIGH-1"),
        ("implement", "coderabbit", "LOW-1"),
    ]


def test_fix_then_repeat_then_approve_and_the_approval_tracks_the_tree(
    cli, stubs, project: Path
) -> None:
    from plan_build.core import gitrepo
    from plan_build.review.approval import current_approval

    wf = to_implementation(cli, stubs, project)
    (project / "app.py").write_text("def page(limit):\n    return limit\n")
    stubs.rule("codex", codex_rule(IMPL_REVIEW))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    assert cli("review.impl", cwd=project).code == 0
    decide(wf, "implement", 1, "### MEDIUM-1\nDecision: FIX\n")

    r = cli("review.approve", cwd=project)
    assert r.code == 6
    assert "MEDIUM-1 marked FIX, but the change has not moved" in r.stderr
    r = cli("review", cwd=project)
    assert r.code == 0  # an answer about the round, not a failure
    assert "implementation round 1 cannot be approved yet" in r.stderr
    assert "apply the fixes, then plan-build review.repeat" in r.stderr

    (project / "app.py").write_text("def page(limit):\n    return max(0, min(limit, 100))\n")
    r = cli("review.status", cwd=project)
    assert "Change:           STALE" in r.stderr
    r = cli("review.approve", cwd=project)
    assert r.code == 6
    assert "the change has moved since implementation round 1 reviewed it" in r.stderr

    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.repeat", cwd=project)
    assert r.code == 0, r.stderr
    r = cli("review.approve", cwd=project)
    assert r.code == 0, r.stderr
    assert f"Approved implementation round 2. Workflow {wf.name} completed." in r.stderr

    repo = gitrepo.discover(project)
    approval = current_approval(repo, env={"HOME": str(Path.home())}, parents=lambda: [])
    assert approval.approved
    assert approval.fresh
    assert approval.workflow == wf.name
    (project / "app.py").write_text("changed after approval\n")
    approval = current_approval(repo, env={"HOME": str(Path.home())}, parents=lambda: [])
    assert approval.approved
    assert approval.stale is True
    assert "moved since implementation round 2 was approved" in approval.reason


def test_review_state_files_do_not_make_a_review_stale(cli, stubs, project: Path) -> None:
    to_implementation(cli, stubs, project)
    (project / "app.py").write_text("x = 1\n")
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    assert cli("review.impl", cwd=project).code == 0
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert data["stale"] is False
    assert data["reviewed_tree"] == data["current_tree"]


def test_a_rate_limited_coderabbit_is_skipped_never_clean(cli, stubs, project: Path) -> None:
    wf = to_implementation(cli, stubs, project)
    (project / "app.py").write_text("x = 1\n")
    stubs.rule("codex", codex_rule(CLEAN))
    error = {
        "type": "error",
        "errorType": "rate_limit",
        "message": "Rate limit exceeded",
        "metadata": {"waitTime": "40 minutes"},
    }
    for rule in reversed(rabbit_agent(error, exit=1)):
        stubs.rule("coderabbit", rule)

    r = cli("review.impl", cwd=project)

    assert r.code == 6
    assert (
        "coderabbit did not review this round (skipped: "
        "rate limited (Rate limit exceeded; retry in 40 minutes))" in r.stderr
    )
    review = (wf / "artifacts" / "implement-review-r1.md").read_text()
    assert "CodeRabbit did not review this round: rate limited" in review
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert data["reviewers"]["coderabbit"]["status"] == "skipped"
    r = cli("review.approve", cwd=project)
    assert r.code == 4  # going ahead without CodeRabbit needs the user, on a terminal


def test_coderabbit_plain_output_from_an_older_cli(cli, stubs, project: Path) -> None:
    wf = to_implementation(cli, stubs, project)
    (project / "app.py").write_text("x = 1\n")
    stubs.rule("codex", codex_rule(IMPL_REVIEW))
    plain = (
        "Starting CodeRabbit review in plain text mode...\n\n"
        "============================================================================\n"
        "File: app.py\nLine: 1 to 3\nType: potential_issue\n\n"
        "Comment:\nUnvalidated input reaches the query.\n\nMore words.\n\n"
        "Prompt for AI Agent:\nIn app.py around lines 1 to 3, validate limit.\n\n"
        "============================================================================\n"
        "File: app.py\nLine: 9\nType: nitpick\n\nComment:\nPrefer f-strings.\n\n"
        "Review completed ✔\n"
    )
    stubs.rule("coderabbit", {"match": ["review"], "stdout": plain})

    r = cli("review.impl", cwd=project)

    assert r.code == 0, r.stderr
    [call] = [c for c in stubs.calls("coderabbit") if c["argv"][0] == "review"]
    assert call["argv"] == ["review", "--plain", "--type", "uncommitted", "--no-color"]
    assert call["cwd"] == str(project)
    review = (wf / "artifacts" / "implement-review-r1.md").read_text()
    assert "- [MEDIUM-2] `app.py:1-3` Unvalidated input reaches the query." in review
    assert "- [LOW-1] `app.py:9` Prefer f-strings." in review


def test_coderabbit_with_nothing_to_review_is_skipped(cli, stubs, project: Path) -> None:
    wf = to_implementation(cli, stubs, project)
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(
        rabbit_agent(
            {"type": "status", "status": "review_skipped"}, rabbit_complete(0, "review_skipped")
        )
    ):
        stubs.rule("coderabbit", rule)
    r = cli("review.impl", cwd=project)
    assert r.code == 6
    assert "CodeRabbit did not review" in (wf / "artifacts" / "implement-review-r1.md").read_text()


# --- Codex failures -----------------------------------------------------------------------


def test_a_hanging_codex_is_stopped_and_recorded_as_skipped(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_rule(PLAN_REVIEW, sleep=30))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project, env={"CODEX_CALL_TIMEOUT_SEC": "1"})
    assert r.code == 6
    assert "Codex did not review plan round 1 (skipped: timed out after 1s)" in r.stderr
    assert "no review file was written" in r.stderr
    wf = only_workflow(project)
    assert not (wf / "artifacts" / "plan-review-r1.md").exists()
    record = json.loads((wf / "artifacts" / "plan-round-r1.json").read_text())
    assert record["reviewers"]["codex"]["status"] == "skipped"
    assert list((wf / "artifacts").glob("codex-exec.*.log"))
    assert (wf / "decisions.tsv").read_text().count("\n") == 3
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review", cwd=project)  # the same round, again
    assert r.code == 0, r.stderr
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == CLEAN


def test_an_auth_failure_is_skipped_with_its_reason(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_failure("unexpected status 401 Unauthorized: Incorrect API key"))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 6
    assert "skipped: authentication failed (unexpected status 401 Unauthorized" in r.stderr


def test_a_rate_limited_codex_is_skipped(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_failure("You've hit your usage limit. Try again later."))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 6
    assert "skipped: rate limited (You've hit your usage limit" in r.stderr


def test_other_codex_failures_are_errors_with_the_exit_status(cli, stubs, project: Path) -> None:
    stubs.rule("codex", {"match": ["exec"], "stderr": "boom: config broken\n", "exit": 3})
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 6
    assert "(failed: codex exited 3: boom: config broken)" in r.stderr


def test_an_empty_answer_gets_one_strict_retry_then_fails(cli, stubs, project: Path) -> None:
    stubs.rule("codex", {"match": ["exec"], "write_flag": {"-o": ""}, "stdout": ""})
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 6
    assert "Codex's answer is not a review: the answer was empty" in r.stderr
    calls = [c for c in stubs.calls("codex") if c["argv"][0] == "exec"]
    assert len(calls) == 2
    assert "## Format reminder" not in calls[0]["argv"][-1]
    assert "## Format reminder" in calls[1]["argv"][-1]
    assert not (only_workflow(project) / "artifacts" / "plan-review-r1.md").exists()


def test_an_answer_without_findings_section_is_retried(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_rule("Looks good to me!", times=1), codex_rule(PLAN_REVIEW))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 0, r.stderr
    assert "asking once more" in r.stderr
    wf = only_workflow(project)
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == PLAN_REVIEW
    assert len(list((wf / "artifacts").glob("codex-exec.*.log"))) == 1


def test_a_previous_runs_output_file_never_becomes_the_review(cli, stubs, project: Path) -> None:
    # Codex leaves an existing -o file alone when a run writes nothing; plan-build removes it
    # before every run, so the retry below cannot pick up the first run's text.
    second = {"match": ["exec"], "stdout": codex_events(CLEAN)}
    stubs.rule("codex", codex_rule("Looks good to me!", times=1), second)
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 0, r.stderr
    assert (only_workflow(project) / "artifacts" / "plan-review-r1.md").read_text() == CLEAN


def test_a_huge_plan_goes_to_codex_on_stdin(cli, stubs, project: Path) -> None:
    big = "# Plan\n" + ("- step with plenty of detail\n" * 5000)
    (project.parent / "plan.md").write_text(big)
    stubs.rule("codex", codex_rule(CLEAN, read_stdin=True))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 0, r.stderr
    [call] = [c for c in stubs.calls("codex") if c["argv"][0] == "exec"]
    assert call["argv"][-1] == "-"
    assert big in call["stdin"]


def test_missing_codex_changes_nothing(cli, stubs, project: Path) -> None:
    stubs.remove("codex")
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 3
    assert "codex is not installed or not on PATH; nothing was changed" in r.stderr
    assert not (project / ".claude").exists()
    # the hint is the pinned command setup runs (issue 24 item 4), here and in review.doctor
    assert "npm install -g @openai/codex@0.171.0" in r.stderr
    doctor = cli("review.doctor", cwd=project)
    assert "install the Codex CLI (npm install -g @openai/codex@0.171.0)" in doctor.stderr + (
        doctor.stdout
    )


# --- resolution, ownership, bad input ------------------------------------------------------


def test_another_sessions_workflow_is_left_alone(
    cli, stubs, project: Path, private_home: Path
) -> None:
    start_plan_review(cli, stubs, project)
    # another session is another Claude process (the same process under a new id is /clear)
    other = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
    try:
        claude_session(private_home, project, sid=OTHER_SESSION, pid=other.pid)
        stubs.rule("codex", codex_rule(CLEAN))
        r = cli(
            "review.plan",
            "--plan",
            "../plan.md",
            cwd=project,
            env={"PLAN_BUILD_CLAUDE_PID": str(other.pid)},
        )
    finally:
        other.kill()
        other.wait()
    assert r.code == 0, r.stderr
    ids = sorted(p.name for p in (project / WORKFLOWS).iterdir())
    assert len(ids) == 2
    owners = {
        json.loads((project / WORKFLOWS / i / "workflow.json").read_text())["owner_session_id"]
        for i in ids
    }
    assert owners == {SESSION_ID, OTHER_SESSION}


def test_two_unowned_workflows_without_a_session_is_an_error_naming_both(
    cli, stubs, repo: Path
) -> None:
    (repo.parent / "plan.md").write_text(PLAN)
    stubs.rule("codex", codex_rule(CLEAN))
    first = cli("review.plan", "--plan", "../plan.md", cwd=repo)
    assert first.code == 0, first.stderr
    wf = only_workflow(repo)
    clone = repo / WORKFLOWS / "20261130-000000-abcdef"
    clone.mkdir()
    data = json.loads((wf / "workflow.json").read_text())
    data["id"] = clone.name
    (clone / "workflow.json").write_text(json.dumps(data, indent=2) + "\n")
    r = cli("review.status", cwd=repo)
    assert r.code == 2
    assert f"multiple active workflows found: {clone.name}, {wf.name}" in r.stderr
    assert "--workflow ID" in r.stderr


@pytest.mark.parametrize("bad", ["../etc", "a/b", "..", ".hidden"])
def test_a_workflow_id_with_a_path_in_it_is_refused(cli, stubs, project: Path, bad: str) -> None:
    r = cli("review.status", "--workflow", bad, cwd=project)
    assert r.code == 2
    assert "is not a workflow id" in r.stderr


def test_an_unknown_workflow_id_is_an_error_not_a_new_workflow(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli(
        "review.plan", "--plan", "../plan.md", "--workflow", "20261130-000000-abcdef", cwd=project
    )
    assert r.code == 2
    assert "no workflow 20261130-000000-abcdef" in r.stderr
    assert not (project / ".claude").exists()


def test_corrupt_state_is_reported_and_left_untouched(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    (wf / "workflow.json").write_text('{"version": 2, "id": "' + wf.name + '", "phase": "pla')
    before = tree_bytes(project)
    for command in ("review.status", "review.approve", "review.plan", "review"):
        r = cli(command, cwd=project)
        if command == "review.status":  # read-only: answers, with the warning
            assert r.code == 0, r.stderr
            assert f"warning: skipped workflow folder {wf.name}: not JSON" in r.stderr
        else:  # acting beside the only (broken) folder would lose it: stop, exit 3
            assert r.code == 3, (command, r.stderr)
            assert f"workflow folder {wf.name} is broken" in r.stderr
    r = cli("review.status", "--workflow", wf.name, cwd=project)  # named: the error itself
    assert r.code == 2
    assert "is not a valid workflow file" in r.stderr
    assert tree_bytes(project) == before


def test_an_unknown_decision_word_stops_the_approval_naming_it(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: MAYBE\n### LOW-1\nDecision: REJECT\n")
    r = cli("review.approve", cwd=project)
    assert r.code == 6
    assert (
        "HIGH-1 is undecided: 'MAYBE' after 'Decision:' (plan-findings-r1.md line 2) "
        "is not a decision word" in r.stderr
    )
    assert json.loads((wf / "workflow.json").read_text())["phase"] == "plan"


def test_a_ledger_with_wrong_columns_is_left_untouched(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    ledger = wf / "decisions.tsv"
    ledger.write_text(ledger.read_text().replace("\tseverity\t", "\tsev\t"))
    before = tree_bytes(project)
    r = cli("review.summary", cwd=project)
    assert r.code == 2
    assert "the ledger's columns are not codex-review's" in r.stderr
    assert tree_bytes(project) == before


def test_a_live_lock_stops_the_round_and_names_the_holder(cli, stubs, project: Path) -> None:
    import os

    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: REJECT\n")
    (wf / ".lock").mkdir()
    (wf / ".lock" / "pid").write_text(str(os.getpid()))
    r = cli("review.approve", cwd=project)
    assert r.code == 6
    assert f"is already being reviewed by another process (pid {os.getpid()})" in r.stderr
    assert json.loads((wf / "workflow.json").read_text())["phase"] == "plan"
    r = cli("review.status", "--json", cwd=project)  # read-only while someone else works
    assert r.code == 0
    assert json.loads(r.stdout)["synced"] is False


def test_status_with_no_workflow(cli, stubs, project: Path) -> None:
    r = cli("review.status", "--json", cwd=project)
    assert r.code == 0
    assert json.loads(r.stdout)["workflow"] is None
    assert "No active workflow found." in r.stderr


def test_done_finishes_without_approval(cli, stubs, project: Path) -> None:
    from plan_build.core import gitrepo
    from plan_build.review.approval import current_approval

    wf = start_plan_review(cli, stubs, project)
    r = cli("review.done", cwd=project)
    assert r.code == 0
    assert f"Workflow {wf.name} marked completed (without approval)." in r.stderr
    approval = current_approval(
        gitrepo.discover(project), env={"HOME": str(Path.home())}, parents=lambda: []
    )
    assert not approval.approved
    assert "marked done without approval" in approval.reason


def test_doctor_reports_session_workflow_and_tools(cli, stubs, project: Path) -> None:
    start_plan_review(cli, stubs, project)
    r = cli("review.doctor", "--json", cwd=project)
    assert r.code == 0
    data = json.loads(r.stdout)
    checks = {c["id"]: c for c in data["checks"]}
    assert checks["claude.session"]["status"] == "pass"
    assert SESSION_ID in checks["claude.session"]["detail"]
    assert checks["workflow.resolution"]["status"] == "pass"
    assert checks["tool.codex"]["detail"].startswith("codex-cli 0.171.0")
    assert data["root_cause"] == "healthy"


def test_the_review_directory_is_never_removed_wholesale(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    (project / ".claude" / "codex-review" / "notes.txt").write_text("mine\n")
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: REJECT\n")
    assert cli("review.approve", cwd=project).code == 0
    assert cli("review.done", cwd=project).code == 0
    assert (project / ".claude" / "codex-review" / "notes.txt").read_text() == "mine\n"
    assert git(project, "status", "--porcelain").strip().startswith("??")


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_stopping_a_review_kills_codex_and_keeps_nothing_half_done(
    stubs, project: Path, signame: str
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    stubs.rule("codex", codex_rule(PLAN_REVIEW, sleep=60, ignore_sigterm=True))
    proc = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "review.plan", "--plan", "../plan.md"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    deadline = time.monotonic() + 30
    while not [c for c in stubs.calls("codex") if c["argv"][0] == "exec"]:
        assert time.monotonic() < deadline, "codex was never started"
        time.sleep(0.05)
    codex_pid = next(c for c in stubs.calls("codex") if c["argv"][0] == "exec")["pid"]
    proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=30)

    assert proc.returncode == 130
    assert "stopped: plan round 1 stays unreviewed; no review file was written" in err
    wf = only_workflow(project)
    assert not (wf / ".lock").exists()
    assert not (wf / "artifacts" / "plan-review-r1.md").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(codex_pid, 0)


def test_an_unowned_workflow_is_claimed_by_the_session_that_uses_it(
    cli, stubs, repo: Path, private_home: Path
) -> None:
    (repo.parent / "plan.md").write_text(PLAN)
    stubs.rule("codex", codex_rule(PLAN_REVIEW))
    assert cli("review.plan", "--plan", "../plan.md", cwd=repo).code == 0
    wf = only_workflow(repo)
    assert "owner_session_id" not in json.loads((wf / "workflow.json").read_text())
    claude_session(private_home, repo)
    r = cli("review.status", cwd=repo)
    assert r.code == 0
    assert f"now belongs to Claude session {SESSION_ID}" in r.stderr
    state = json.loads((wf / "workflow.json").read_text())
    assert state["owner_session_id"] == SESSION_ID
    assert state["owner_project_key"] == "".join(c if c.isalnum() else "-" for c in str(repo))


def test_plan_review_refuses_a_workflow_in_implementation(cli, stubs, project: Path) -> None:
    to_implementation(cli, stubs, project)
    r = cli("review.plan", cwd=project)
    assert r.code == 2
    assert "is past planning (implementation round 1)" in r.stderr
    assert "review.impl" in r.stderr


def test_new_files_are_included_when_coderabbit_supports_it(cli, stubs, project: Path) -> None:
    to_implementation(cli, stubs, project)
    (project / "new_module.py").write_text("x = 1\n")
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    help_text = "Options:\n  --uncommitted\n  --include-untracked  Include untracked files\n"
    stubs.rule("coderabbit", {"match": ["review", "--help"], "stdout": help_text})
    assert cli("review.impl", cwd=project).code == 0
    [review] = [c for c in stubs.calls("coderabbit") if c["argv"][:2] == ["review", "--agent"]]
    assert review["argv"] == ["review", "--agent", "--uncommitted", "--include-untracked"]


def test_codex_and_coderabbit_review_the_change_at_the_same_time(
    cli, stubs, project: Path, tmp_path: Path
) -> None:
    """CodeRabbit must already be running while Codex reviews: a round takes as long as the
    slower reviewer. (Codex's stub only answers once CodeRabbit's stub has started.)"""
    to_implementation(cli, stubs, project)
    (project / "app.py").write_text("x = 1\n")
    started = tmp_path / "coderabbit-started"
    stubs.rule("codex", codex_rule(CLEAN, wait_for=str(started)))
    for rule in reversed(rabbit_agent(rabbit_complete(), write={str(started): "yes"}, sleep=0.5)):
        stubs.rule("coderabbit", rule)
    r = cli("review.impl", cwd=project)
    assert r.code == 0, r.stderr
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert data["stale"] is False


def test_a_failed_codex_review_stops_coderabbit_too(cli, stubs, project: Path) -> None:
    to_implementation(cli, stubs, project)
    (project / "app.py").write_text("x = 1\n")
    stubs.rule("codex", codex_failure("unexpected status 401 Unauthorized: bad key"))
    for rule in reversed(rabbit_agent(rabbit_complete(), sleep=60, ignore_sigterm=True)):
        stubs.rule("coderabbit", rule)
    # CodeRabbit (and its probes) hang for 60 s ignoring SIGTERM: the round must end within
    # seconds of Codex's failure, not wait out a probe's 30 s limit.
    r = cli("review.impl", cwd=project, timeout=20)
    assert r.code == 6
    assert "Codex did not review" in r.stderr
    # Whichever CodeRabbit process had started (a probe or the review) is gone, not left behind.
    started = stubs.calls("coderabbit")
    deadline = time.monotonic() + 10
    for call in started:
        stat = Path(f"/proc/{call['pid']}/stat")
        while stat.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not stat.exists() or _state(stat) == "Z", call["argv"]


def _state(stat: Path) -> str:
    try:
        return stat.read_text().split()[2]
    except FileNotFoundError:
        return "Z"
