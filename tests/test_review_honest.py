"""Review state that must neither lie nor block (issue 12 items 4-8, 10, 11; issue 17's
finding text): the real `plan-build` entry point, stub `codex` and `coderabbit` on PATH, a
Claude session file for this test process."""

from __future__ import annotations

import datetime as dt
import io
import json
import time
from pathlib import Path

import pytest

from plan_build.core.ui import Console
from plan_build.review.layout import WorkflowDir
from plan_build.review.workflowfile import create, dumps
from tests.support.reviewkit import (
    CLEAN,
    IMPL_REVIEW,
    PLAN,
    PLAN_REVIEW,
    WORKFLOWS,
    claude_session,
    codex_rule,
    decide,
    only_workflow,
    rabbit_agent,
    rabbit_complete,
    rabbit_finding,
    start_plan_review,
    tree_bytes,
)

FAST = {"PLAN_BUILD_HEARTBEAT_SEC": "0.2"}


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    return repo


def rabbit(stubs, *events, **extra) -> None:
    for rule in reversed(rabbit_agent(*events, **extra)):
        stubs.rule("coderabbit", rule)


def to_implementation(cli, stubs, project: Path) -> Path:
    wf = start_plan_review(cli, stubs, project, CLEAN)
    r = cli("review.approve", cwd=project)
    assert r.code == 0, r.stderr
    (project / "app.py").write_text("def page(limit):\n    return limit\n")
    return wf


def codex_review_workflow(root: Path, wf_id: str, *, phase: str = "plan") -> Path:
    """A workflow directory the way codex-review leaves it (no plan-build records)."""
    wdir = WorkflowDir(root, wf_id)
    wdir.artifacts.mkdir(parents=True)
    wdir.plan.write_text(PLAN)
    wf = create(wdir, dt.datetime(2026, 11, 30, 10, tzinfo=dt.UTC), "plan review", phase=phase)
    wdir.workflow_json.write_text(dumps(wf))
    return wdir.path


# --- item 4: a review file that is not a review ---------------------------------------------


def test_a_review_file_that_is_not_a_review_is_never_approved_and_is_reviewed_again(
    cli, stubs, project: Path
) -> None:
    wf = codex_review_workflow(project, "20261130-100000-abcdef")
    (wf / "artifacts" / "plan-review-r1.md").write_text("I could not parse the request.\n")
    decide(wf, "plan", 1, "ok\n")

    r = cli("review.approve", cwd=project)
    assert r.code == 6, r.stderr
    assert "plan-review-r1.md is not a review" in r.stderr
    assert json.loads((wf / "workflow.json").read_text())["phase"] == "plan"
    assert not (wf / "artifacts" / "plan-approval-r1.json").exists()
    status = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert status["step"] == "working"
    assert any("is not a review" in b for b in status["blocking"])

    stubs.rule("codex", codex_rule(PLAN_REVIEW))
    r = cli("review", cwd=project)
    assert [c for c in stubs.calls("codex") if c["argv"][0] == "exec"], r.stderr
    assert (wf / "artifacts" / "plan-review-r1.md").read_text() == PLAN_REVIEW
    kept = list((wf / "artifacts").glob("plan-review-r1.not-a-review.*.md"))
    assert [p.read_text() for p in kept] == ["I could not parse the request.\n"]
    assert "findings without a decision: HIGH-1, LOW-1" in r.stderr


# --- item 5: decisions written while the round is still running ------------------------------


def test_a_findings_file_written_during_the_review_never_makes_the_round_clean(
    cli, stubs, project: Path
) -> None:
    wf = to_implementation(cli, stubs, project)
    early = f"{WORKFLOWS}/{wf.name}/artifacts/implement-findings-r1.md"
    # Codex's stub writes the decision while it is still reviewing
    stubs.rule("codex", codex_rule(IMPL_REVIEW, write={early: "### MEDIUM-1\nDecision: FIX\n"}))
    rabbit(stubs, rabbit_complete())

    r = cli("review.impl", cwd=project)

    assert "no findings and every reviewer ran" not in r.stderr
    assert "finished with 1 finding" in r.stderr
    assert "MEDIUM-1" in r.stderr
    assert "was written before this review finished" in r.stderr
    status = json.loads(cli("review.status", "--json", cwd=project).stdout)
    approve = cli("review.approve", cwd=project)
    assert approve.code == 6
    assert status["blocking"]
    for text in status["blocking"]:
        assert text in approve.stderr


# --- item 6: one blocking list ---------------------------------------------------------------


def test_status_blocking_is_what_approve_enforces(cli, stubs, project: Path) -> None:
    wf = to_implementation(cli, stubs, project)
    stubs.rule("codex", codex_rule(IMPL_REVIEW))
    rabbit(stubs, rabbit_complete())
    cli("review.impl", cwd=project)
    decide(wf, "implement", 1, "### MEDIUM-1\nDecision: FIX\n")

    status = json.loads(cli("review.status", "--json", cwd=project).stdout)
    approve = cli("review.approve", cwd=project)

    assert approve.code == 6
    assert "MEDIUM-1 marked FIX, but the change has not moved" in approve.stderr
    assert any("MEDIUM-1 marked FIX" in b for b in status["blocking"])
    for text in status["blocking"]:
        assert text in approve.stderr

    (project / "app.py").write_text("def page(limit):\n    return max(limit, 0)\n")
    status = json.loads(cli("review.status", "--json", cwd=project).stdout)
    approve = cli("review.approve", cwd=project)
    assert approve.code == 6
    assert status["blocking"]
    for text in status["blocking"]:
        assert text in approve.stderr


# --- item 7: an unknown word after Decision: -------------------------------------------------


def test_an_unknown_decision_word_never_blocks_read_only_commands(
    cli, stubs, project: Path
) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: Partially accept\n### LOW-1\nDecision: REJECT\n")

    r = cli("review.status", cwd=project)
    assert r.code == 0, r.stderr
    assert "HIGH-1" in r.stderr
    assert "'Partially accept'" in r.stderr
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert data["step"] == "review"
    [high] = [f for f in data["findings"] if f["finding_id"] == "HIGH-1"]
    assert high["decision"] == "OPEN"
    assert cli("review.summary", cwd=project).code == 0
    assert cli("review.summary", "--json", cwd=project).code == 0

    for command in ("review.approve", "review.repeat", "review.impl"):
        r = cli(command, cwd=project)
        assert r.code == 6, (command, r.stderr)
        assert "HIGH-1" in r.stderr
        assert "'Partially accept'" in r.stderr
        assert "ACCEPT | REJECT | DEFER" in r.stderr
    assert json.loads((wf / "workflow.json").read_text())["phase"] == "plan"

    r = cli("review.done", cwd=project)
    assert r.code == 0, r.stderr


# --- item 8: folders that are not workflows --------------------------------------------------


def test_broken_foreign_and_copied_workflow_folders_are_skipped_with_a_warning(
    cli, stubs, project: Path
) -> None:
    wf = start_plan_review(cli, stubs, project)
    base = project / WORKFLOWS
    (base / "20261101-000000-000001").mkdir()
    (base / "20261101-000000-000001" / "workflow.json").write_text('{"version": 2, "id": ')
    foreign = codex_review_workflow(project, "20261101-000000-000002")
    data = json.loads((foreign / "workflow.json").read_text())
    (foreign / "workflow.json").write_text(json.dumps({**data, "phase": "deploy"}))
    copied = base / "20261101-000000-000003"
    copied.mkdir()
    (copied / "workflow.json").write_bytes((wf / "workflow.json").read_bytes())
    before = {p: b for p, b in tree_bytes(project).items() if "000000-00000" in p}

    for command in ("review.status", "review.summary"):
        r = cli(command, cwd=project)
        assert r.code == 0, (command, r.stderr)
        assert wf.name in r.stderr
        for bad in ("000001", "000002", "000003"):
            assert f"20261101-000000-{bad}" in r.stderr, (command, bad)
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert data["workflow"] == wf.name
    doctor = json.loads(cli("review.doctor", "--json", cwd=project).stdout)
    [skipped] = [c for c in doctor["checks"] if c["id"] == "workflow.skipped"]
    assert skipped["status"] == "warn"
    for bad in ("000001", "000002", "000003"):
        assert f"20261101-000000-{bad}" in skipped["detail"]
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: REJECT\n")
    assert cli("review.approve", cwd=project).code == 0
    assert {p: b for p, b in tree_bytes(project).items() if "000000-00000" in p} == before


# --- item 10: one live line for both reviewers -----------------------------------------------


def test_the_progress_line_names_both_reviewers_and_their_state() -> None:
    from plan_build.review.reviewers import Progress

    stream = io.StringIO()
    progress = Progress(Console(stream=stream, fancy=True), ["codex", "coderabbit"], every=30)
    progress.started = time.monotonic() - 41
    progress.finish("coderabbit", "done (3 findings)")
    progress.render()
    assert "codex reviewing · 41s · coderabbit done (3 findings)" in stream.getvalue()
    assert stream.getvalue().startswith("\r\033[K")


def test_off_a_terminal_the_progress_is_a_line_per_interval() -> None:
    from plan_build.review.reviewers import Progress

    stream = io.StringIO()
    with Progress(Console(stream=stream, fancy=False), ["codex", "coderabbit"], every=0.05) as p:
        time.sleep(0.3)
        p.finish("codex", "done (no findings)")
        time.sleep(0.2)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 4
    assert all(line.startswith("  codex ") and "· coderabbit reviewing" in line for line in lines)
    assert "codex done (no findings)" in lines[-1]
    assert "\r" not in stream.getvalue()


def test_implementation_rounds_show_both_reviewers_while_they_run(
    cli, stubs, project: Path
) -> None:
    to_implementation(cli, stubs, project)
    stubs.rule("codex", codex_rule(CLEAN, sleep=0.3))
    rabbit(stubs, rabbit_finding("major", "app.py", "Bounds"), rabbit_complete(1), sleep=1.2)
    r = cli("review.impl", cwd=project, env=FAST)
    lines = [ln for ln in r.stderr.splitlines() if "· coderabbit" in ln]
    assert any(ln.strip().startswith("codex reviewing") for ln in lines), r.stderr
    assert any("codex done (no findings)" in ln and "coderabbit reviewing" in ln for ln in lines)


def test_on_a_terminal_one_live_line_names_both_reviewers(cli, stubs, project: Path) -> None:
    import os
    import sys

    from tests.support.pty_run import run_on_pty

    to_implementation(cli, stubs, project)
    stubs.rule("codex", codex_rule(CLEAN, sleep=1.5))
    rabbit(stubs, rabbit_finding("major", "app.py", "Bounds"), rabbit_complete(1), sleep=0.2)
    env = {**os.environ, "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    r = run_on_pty([sys.executable, "-m", "plan_build", "review.impl"], cwd=project, env=env)
    assert r.code == 0, r.output
    assert "\r\033[K  codex reviewing · " in r.output
    assert "· coderabbit done (1 finding)" in r.output
    assert "still reviewing" not in r.output


# --- item 11: smaller ------------------------------------------------------------------------


def test_a_coderabbit_crash_records_its_exit_code_and_stderr(cli, stubs, project: Path) -> None:
    wf = to_implementation(cli, stubs, project)
    stubs.rule("codex", codex_rule(CLEAN))
    rabbit(stubs, exit=1, stderr="TypeError: cannot read 'files'\n    at review (cli.js:9)\n")
    r = cli("review.impl", cwd=project)
    assert r.code == 6
    run = json.loads((wf / "artifacts" / "implement-round-r1.json").read_text())["reviewers"][
        "coderabbit"
    ]
    assert run["status"] == "failed"
    assert run["exit_code"] == 1
    assert "at review (cli.js:9)" in run["stderr_tail"]
    assert "exited 1" in run["reason"]
    assert "TypeError: cannot read 'files'" in run["reason"]


def test_status_json_without_a_workflow_has_every_key(cli, stubs, project: Path) -> None:
    empty = json.loads(cli("review.status", "--json", cwd=project).stdout)
    start_plan_review(cli, stubs, project)
    full = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert set(empty) == set(full)
    assert empty["workflow"] is None
    assert empty["blocking"] == []
    assert empty["files"] is None


def test_status_shows_a_completed_workflow_until_a_new_one_starts(
    cli, stubs, project: Path
) -> None:
    wf = start_plan_review(cli, stubs, project, CLEAN)
    assert cli("review.approve", cwd=project).code == 0
    stubs.rule("codex", codex_rule(CLEAN))
    rabbit(stubs, rabbit_complete())
    assert cli("review.impl", cwd=project).code == 0
    assert cli("review.approve", cwd=project).code == 0

    r = cli("review.status", cwd=project)
    assert r.code == 0
    assert "No active workflow found" not in r.stderr
    assert wf.name in r.stderr
    assert "completed" in r.stderr
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert (data["workflow"], data["status"], data["blocking"]) == (wf.name, "completed", [])

    stubs.rule("codex", codex_rule(CLEAN))
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    data = json.loads(cli("review.status", "--json", cwd=project).stdout)
    assert data["workflow"] != wf.name
    assert data["status"] == "active"


def test_focus_text_keeps_its_whitespace(cli, stubs, project: Path) -> None:
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.plan", "--plan", "../plan.md", "--focus", "Fix  the\tpager ", cwd=project)
    assert r.code == 0, r.stderr
    wf = only_workflow(project)
    assert json.loads((wf / "workflow.json").read_text())["task"] == "Fix  the\tpager"
    prompt = [c for c in stubs.calls("codex") if c["argv"][0] == "exec"][-1]["argv"][-1]
    assert "Fix  the\tpager" in prompt


def test_a_round_that_finished_with_findings_exits_0_with_the_findings(
    cli, stubs, project: Path
) -> None:
    stubs.rule("codex", codex_rule(PLAN_REVIEW))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 0, r.stderr
    assert "plan round 1 finished with 2 findings" in r.stderr
    assert "[HIGH-1] The plan has no rollback step." in r.stderr
    assert "[LOW-1] Step 2 says 'endpont'." in r.stderr
    r = cli("review", cwd=project)  # still waiting for decisions: an answer, not a failure
    assert r.code == 0, r.stderr
    assert "findings without a decision: HIGH-1, LOW-1" in r.stderr


# --- issue 17: finding text that looks like ledger rows --------------------------------------


def test_finding_text_with_control_characters_never_becomes_a_ledger_row(
    cli, stubs, project: Path
) -> None:
    fields = "plan plan 1 codex HIGH-9 HIGH fake ACCEPT FIX yes agreed-fix 2026-01-01T00:00:00Z"
    fake = fields.replace(" ", "\t")
    nasty = f"[HIGH-1] one\ttab\rcr\vvt\x1cfs\x85nel\u2028ls\r\n{fake}\u2028{fake}\x1c{fake}\n"
    review = nasty + "\n## Summary\nCritical: 0\nHigh: 1\nMedium: 0\nLow: 0\n"
    stubs.rule("codex", codex_rule(review))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    wf = only_workflow(project)
    ledger = (wf / "decisions.tsv").read_text(encoding="utf-8")
    rows = [ln.split("\t") for ln in ledger.split("\n")[3:] if ln]
    assert [row[4] for row in rows] == ["HIGH-1"], (r.stderr, ledger)
    for ch in "\r\v\x1c\x85\u2028":
        assert ch not in ledger
    assert len(rows[0]) == 12
    if r.code != 0:  # a refusal writes nothing but what it says it wrote
        assert not (wf / "artifacts" / "plan-review-r1.md").exists()
    else:
        assert (wf / "artifacts" / "plan-review-r1.md").exists()


def test_nothing_is_written_when_the_ledger_refuses_the_sync(cli, stubs, project: Path) -> None:
    wf = start_plan_review(cli, stubs, project)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: REJECT\n")
    stubs.rule("codex", codex_rule(PLAN_REVIEW))
    ledger = wf / "decisions.tsv"
    # a round-2 row someone broke by hand: the sync of round 2 must refuse it
    ledger.write_text(ledger.read_text() + "plan\tplan\t2\tcodex\tHIGH-1 broken row\n")
    assert cli("review.status", cwd=project).code == 0  # round 1's rows are synced
    before = tree_bytes(project)
    r = cli("review.repeat", cwd=project)
    assert r.code == 2, r.stderr
    assert "decisions.tsv" in r.stderr
    after = tree_bytes(project)
    assert not (wf / "artifacts" / "plan-review-r2.md").exists()
    assert not (wf / "artifacts" / "plan-findings-r2.md").exists()
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed <= {str((wf / "workflow.json").relative_to(project))}, changed
