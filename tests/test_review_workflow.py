"""workflow.json in codex-review's exact format, ids that are safe directory names, and the
step derived from a round's files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.review.layout import GENERATED_ID, WorkflowDir, check_id, find_root, new_id
from plan_build.review.steps import Step, inspect
from plan_build.review.workflowfile import create, dumps, load, parse, project_key, save

NOW = dt.datetime(2026, 11, 30, 10, 15, 0, tzinfo=dt.UTC)


def test_new_ids_have_codex_reviews_shape() -> None:
    wf_id = new_id(NOW)
    assert GENERATED_ID.match(wf_id)
    assert wf_id.startswith("20261130-101500-")


@pytest.mark.parametrize("bad", ["../x", "a/b", "..", ".hidden", "a..b", "", "x" * 200, "a b"])
def test_unsafe_ids_are_refused(bad: str) -> None:
    with pytest.raises(PlanBuildError) as err:
        check_id(bad)
    assert err.value.code == ExitCode.USAGE
    assert "is not a workflow id" in str(err.value)


def test_a_new_workflow_is_written_in_codex_reviews_key_order(tmp_path: Path) -> None:
    wdir = WorkflowDir(tmp_path, "20261130-101500-a1b2c3")
    wf = create(wdir, NOW, "  Add\npagination  ")
    save(wdir, wf, NOW)
    assert wdir.workflow_json.read_text() == (
        "{\n"
        '  "version": 2,\n'
        '  "id": "20261130-101500-a1b2c3",\n'
        '  "task": "Add pagination",\n'
        '  "phase": "plan",\n'
        '  "round": 1,\n'
        '  "status": "active",\n'
        '  "created_at": "2026-11-30T10:15:00Z",\n'
        '  "updated_at": "2026-11-30T10:15:00Z"\n'
        "}\n"
    )
    assert oct(wdir.workflow_json.stat().st_mode & 0o777) == "0o644"


def test_strings_are_escaped_as_gos_encoder_escapes_them(tmp_path: Path) -> None:
    wdir = WorkflowDir(tmp_path, "w1")
    wf = create(wdir, NOW, "")
    wf.task = "a <b> & ü\u2028"
    text = dumps(wf)
    assert '"task": "a \\u003cb\\u003e \\u0026 ü\\u2028"' in text
    assert parse(text, wdir.workflow_json, "w1").task == "a <b> & ü\u2028"


def test_unknown_keys_are_kept_after_the_known_ones(tmp_path: Path) -> None:
    text = (
        '{"id": "w1", "x_tool": {"n": 1}, "version": 1, "phase": "plan", "round": 0, '
        '"status": "active"}'
    )
    wf = parse(text, tmp_path / "workflow.json", "w1")
    assert wf.round == 1  # <=0 reads as 1
    out = json.loads(dumps(wf))
    assert list(out)[-1] == "x_tool"
    assert out["x_tool"] == {"n": 1}
    assert out["version"] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "the top level is not an object"),
        ('{"id": "other", "phase": "plan", "status": "active"}', "does not match its directory"),
        ('{"id": "w1", "phase": "review", "status": "active"}', "phase 'review'"),
        ('{"id": "w1", "phase": "plan", "status": "paused"}', "status 'paused'"),
        ('{"id": "w1", "phase": "plan", "status": "active", "round": "2"}', "round must be a int"),
        ('{"id": "w1", "phase": "plan", "status": "active", "round": true}', "round must be a int"),
    ],
)
def test_a_corrupt_file_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(PlanBuildError) as err:
        parse(text, tmp_path / "w1" / "workflow.json", "w1")
    assert err.value.code == ExitCode.USAGE
    assert message in str(err.value)
    assert "is not a valid workflow file" in str(err.value)


def test_a_future_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        PlanBuildError, match="has version 3; this plan-build understands version 2"
    ):
        parse('{"version": 3, "id": "w1"}', tmp_path / "workflow.json", "w1")


def test_a_half_written_file_is_reported_not_guessed(tmp_path: Path) -> None:
    wdir = WorkflowDir(tmp_path, "w1")
    wdir.path.mkdir(parents=True)
    wdir.workflow_json.write_bytes(b'{"version": 2, "id": "w1", "task": "caf\xc3')
    with pytest.raises(PlanBuildError, match="not UTF-8 text"):
        load(wdir)


def test_project_key_matches_codex_review() -> None:
    assert project_key("/home/ana/src/shop.v2") == "-home-ana-src-shop-v2"


def test_the_project_root_is_the_nearest_directory_with_workflows(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "pkg" / "deep"
    sub.mkdir(parents=True)
    assert find_root(sub, repo) == repo.resolve()
    (repo / "pkg" / ".claude" / "codex-review" / "workflows").mkdir(parents=True)
    assert find_root(sub, repo) == (repo / "pkg").resolve()


def test_steps_follow_the_rounds_files(tmp_path: Path) -> None:
    wdir = WorkflowDir(tmp_path, "w1")
    wf = create(wdir, NOW, "")
    wdir.artifacts.mkdir(parents=True)
    assert inspect(wf, wdir).step == Step.WORKING
    wdir.review("plan", 1).write_text("  \n")
    assert inspect(wf, wdir).step == Step.WORKING
    wdir.review("plan", 1).write_text("[HIGH-1] a\n[LOW-1] b\n")
    assert inspect(wf, wdir).step == Step.REVIEW
    wdir.findings("plan", 1).write_text("### HIGH-1\nDecision: ACCEPT\n")
    view = inspect(wf, wdir)
    assert view.step == Step.REVIEW
    assert [f.id for f in view.undecided] == ["LOW-1"]
    wdir.findings("plan", 1).write_text("### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: OPEN\n")
    assert inspect(wf, wdir).step == Step.REVIEW  # OPEN is not a decision
    wdir.findings("plan", 1).write_text(
        "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: DEFER\n"
    )
    assert inspect(wf, wdir).step == Step.APPROVAL
    wf.status = "completed"
    assert inspect(wf, wdir).step == Step.COMPLETED


def test_a_clean_round_still_needs_a_non_empty_findings_file(tmp_path: Path) -> None:
    wdir = WorkflowDir(tmp_path, "w1")
    wf = create(wdir, NOW, "")
    wdir.artifacts.mkdir(parents=True)
    wdir.review("plan", 1).write_text("No findings.\nCritical: 0\nHigh: 0\nMedium: 0\nLow: 0\n")
    assert inspect(wf, wdir).step == Step.REVIEW
    wdir.findings("plan", 1).write_text("Nothing to decide.\n")
    assert inspect(wf, wdir).step == Step.APPROVAL
