"""Claude runs `review.status`, `review.summary` and `status` many times a session: each must
load only what it runs (issue 15). No reviewer, no process killer (psutil), no dispatch recipe:
those load when a round or a task runs, and cost a read-only command most of its time."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plan_build.review.layout import WorkflowDir
from plan_build.review.ledger import HEADER
from plan_build.review.workflowfile import create, save
from tests.support.reviewkit import SESSION_ID, claude_session

ROOT = Path(__file__).resolve().parent.parent
NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
WF_ID = "20261130-120000-abcdef"
HEAVY = {
    "psutil",
    "plan_build.review.rounds",
    "plan_build.review.coderabbit",
    "plan_build.review.codex",
    "plan_build.review.prompts",
    "plan_build.review.plans",
    "plan_build.dispatch.recipe",
    "plan_build.dispatch.runner",
    "jinja2",
    "detect_secrets",
}
# what a plan round's status does not need either: the work-tree snapshot (implementation
# rounds fingerprint the change) and OpenSSL (a round record's plan hash)
LOADED = (
    "import contextlib, io, os, runpy, sys\n"
    "sys.argv = ['plan-build', *sys.argv[1:]]\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    try:\n"
    "        runpy.run_module('plan_build', run_name='__main__')\n"
    "    except SystemExit:\n"
    "        pass\n"
    "open(os.environ['PB_OUT'], 'w').write(out.getvalue())\n"
    "print(' '.join(sorted(sys.modules)))\n"
)


def loaded(cwd: Path, *argv: str) -> tuple[set[str], str]:
    """The modules `plan-build *argv` loaded, and what it printed on stdout."""
    out = cwd.parent / "stdout.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PB_OUT": str(out)}
    r = subprocess.run(
        [sys.executable, "-c", LOADED, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(r.stdout.split()), out.read_text()


@pytest.fixture
def reviewed(repo: Path) -> Path:
    """A plan workflow of this Claude session, at round 2 with findings and decisions."""
    claude_session(Path.home(), repo)
    wdir = WorkflowDir(repo, WF_ID)
    wdir.artifacts.mkdir(parents=True)
    wdir.ledger.write_text(
        HEADER + "plan\tplan\t1\tcodex\tHIGH-1\tHIGH\tno rollback\tACCEPT\tFIX\tyes\tagreed-fix\t"
        "2026-11-30T11:00:00Z\n"
    )
    wf = create(wdir, NOW, "bench")
    wf.owner_session_id = SESSION_ID
    wf.owner_cwd = str(repo)
    wf.round = 2
    wdir.plan.write_text("# plan\n")
    wdir.review("plan", 2).write_text("## Findings\n\n[HIGH-1] no rollback step.\n")
    wdir.findings("plan", 2).write_text("### HIGH-1\nDecision: ACCEPT\n")
    save(wdir, wf, NOW)
    return repo


@pytest.mark.parametrize("command", ["review.status", "review.summary"])
def test_review_status_and_summary_load_no_reviewer_and_no_psutil(
    reviewed: Path, command: str
) -> None:
    modules, out = loaded(reviewed, command, "--json")
    report = json.loads(out)
    assert report["workflow"] == WF_ID  # found through this process's Claude session
    assert report["round"] == 2
    # detect-secrets (and hashlib with it) withholds credentials in the findings these print
    # (ADR 0195): the reviewers, psutil and the plan round's own snapshot still stay out
    assert sorted((HEAVY - {"detect_secrets"} | {"plan_build.core.snapshot"}) & modules) == []
    assert "detect_secrets" in modules


def test_status_loads_no_reviewer_and_no_psutil(repo: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "plan_build", "baseline"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=True,
        capture_output=True,
    )
    (repo / "app.py").write_text("print('hi')\n")
    modules, out = loaded(repo, "status", "--json")
    assert [f["path"] for f in json.loads(out)["change"]["files"]] == ["app.py"]
    assert sorted(HEAVY & modules) == []


def test_status_with_a_review_and_tasks_loads_no_reviewer_and_no_psutil(reviewed: Path) -> None:
    """`status` reads the review workflow and TASKS.md (issue 23): still no reviewer, no
    process killer, no recipe."""
    from tests.support.dispatching import make_plan

    make_plan(reviewed)
    subprocess.run(
        [sys.executable, "-m", "plan_build", "baseline"],
        cwd=reviewed,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=True,
        capture_output=True,
    )
    (reviewed / "src" / "app.py").write_text("fixed\n")
    modules, out = loaded(reviewed, "status", "--json")
    data = json.loads(out)
    assert data["review"]["workflow"] == WF_ID
    assert data["tasks"]["total"] == 3
    assert sorted(HEAVY & modules) == []
