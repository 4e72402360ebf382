"""Interop: directories in exactly the format codex-review writes (tests/fixtures/codex-review,
see shared codex-review-interop.md) are read, and written back byte for byte."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from plan_build.review.layout import WorkflowDir
from plan_build.review.ledger import Ledger
from plan_build.review.steps import Step, inspect
from plan_build.review.workflowfile import dumps, list_ids, load

FIXTURE = Path(__file__).parent / "fixtures" / "codex-review"
ACTIVE = "20261130-101500-a1b2c3"
DONE = "20261129-090000-0f0f0f"
WORKFLOWS = Path(".claude/codex-review/workflows")
LATER = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)  # a sync in sync must not restamp anything


def snapshot(root: Path) -> dict[str, bytes]:
    base = root / ".claude"
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()
    }


@pytest.fixture
def project(repo: Path) -> Path:
    shutil.copytree(FIXTURE / ".claude", repo / ".claude")
    return repo


@pytest.mark.parametrize("wf_id", [ACTIVE, DONE])
def test_workflow_json_loads_and_dumps_to_the_same_bytes(wf_id: str) -> None:
    wdir = WorkflowDir(FIXTURE, wf_id)
    assert dumps(load(wdir)).encode() == wdir.workflow_json.read_bytes()


def test_the_fixture_reads_as_codex_review_sees_it() -> None:
    assert list_ids(FIXTURE) == [DONE, ACTIVE]
    wf = load(WorkflowDir(FIXTURE, ACTIVE))
    assert (wf.phase, wf.round, wf.status) == ("implement", 2, "active")
    assert wf.task == "Paginate the audit log <API v2> & keep cursors stable"
    view = inspect(wf, WorkflowDir(FIXTURE, ACTIVE))
    assert view.step == Step.APPROVAL
    assert view.findings == []


def test_a_synced_ledger_is_left_exactly_as_it_is() -> None:
    wdir = WorkflowDir(FIXTURE, ACTIVE)
    original = wdir.ledger.read_bytes()
    ledger = Ledger.load(wdir.ledger)
    for phase, rnd in (("plan", 1), ("implement", 1), ("implement", 2)):
        wf = load(wdir)
        wf.phase, wf.round = phase, rnd
        view = inspect(wf, wdir)
        assert ledger.sync(phase, rnd, view.entries(), LATER) is False
    assert ledger.data() == original


def test_status_and_summary_leave_every_file_byte_identical(project: Path, cli) -> None:
    before = snapshot(project)
    r = cli("review.status", cwd=project)
    assert r.code == 0, r.stderr
    assert f"Workflow:         {ACTIVE}" in r.stderr
    assert "Step:             approval" in r.stderr
    r = cli("review.summary", "--json", "--workflow", ACTIVE, cwd=project)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert (data["phase"], data["round"], data["step"]) == ("implement", 2, "approval")
    assert data["findings"] == []
    assert data["stale"] is None  # reviewed by codex-review: the reviewed change is unknown
    r = cli("review.summary", "--workflow", DONE, cwd=project)
    assert r.code == 0, r.stderr
    assert "No findings recorded for this round." in r.stderr
    assert snapshot(project) == before
    assert not (project / WORKFLOWS / ACTIVE / ".lock").exists()


def test_an_out_of_sync_round_changes_only_its_own_rows(project: Path, cli) -> None:
    wdir = WorkflowDir(project, ACTIVE)
    findings = wdir.findings("implement", 1)
    findings.write_text(
        findings.read_text().replace(
            "### MEDIUM-1\nDecision: FIX", "### MEDIUM-1\nDecision: WONTFIX"
        )
    )
    wf = json.loads(wdir.workflow_json.read_text())
    wf["round"] = 1
    wdir.workflow_json.write_text(json.dumps(wf, indent=2) + "\n")
    before = wdir.ledger.read_text().splitlines()
    r = cli("review.status", cwd=project)
    assert r.code == 0, r.stderr
    after = wdir.ledger.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 1
    assert changed[0][1].split("\t")[4:11] == [
        "MEDIUM-1",
        "MEDIUM",
        "audit.py:12 the page size is unbounded.",
        "WONTFIX",
        "NO-CHANGE",
        "no",
        "agreed-nochange",
    ]
