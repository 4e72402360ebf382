"""`plan-build tasks`: the plan at a glance, lint problems with lines, and dispatch statistics."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.dispatching import PLAN, codex_edits, make_plan
from tests.support.stubs import Stubs

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def test_a_clean_plan_is_listed_with_statuses(repo: Path, cli) -> None:
    make_plan(repo)
    r = cli("tasks", cwd=repo)
    assert r.code == 0, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines[0] == "TASKS.md · 3 tasks · 2 pending, 1 complete"
    assert "  TASK-001  Complete     Add the audit log model" in lines
    assert "  TASK-002  Pending      Paginate the audit log   after TASK-001" in lines
    # a missing recommended section is a warning, not a failure
    line = PLAN.splitlines().index("## TASK-003: Export the audit log") + 1
    warning = f'TASKS.md:{line}: warning: TASK-003: no "Context", "CodeRabbit", "Evidence" sections'
    assert warning in r.stderr


def test_lint_errors_fail_with_their_lines(repo: Path, cli) -> None:
    text = PLAN.replace("{verify}", "true").replace(
        "Status: Pending\nDependencies: TASK-002", "Status: Started\nDependencies: TASK-002"
    )
    make_plan(repo, text=text)
    line = text.splitlines().index("Status: Started") + 1
    r = cli("tasks", cwd=repo)
    assert r.code == 2
    assert f"TASKS.md:{line}: TASK-003: unknown status 'Started'" in r.stderr
    assert "plan-build: TASKS.md has 1 problem (listed above)" in r.stderr
    assert "fix: fix the named lines, then run plan-build tasks again" in r.stderr


def test_json_lists_tasks_and_problems(repo: Path, cli) -> None:
    make_plan(repo)
    r = cli("tasks", "--json", cwd=repo)
    assert r.code == 0
    data = json.loads(r.stdout)
    assert data["ok"] is True
    assert [t["id"] for t in data["tasks"]] == ["TASK-001", "TASK-002", "TASK-003"]
    second = data["tasks"][1]
    assert second["status"] == "Pending"
    assert second["dependencies"] == ["TASK-001"]
    assert second["scope"] == ["src/app.py", "tests/**"]
    assert all(p["level"] == "warning" for p in data["problems"])


def test_a_scope_entry_matching_nothing_is_a_warning(repo: Path, cli) -> None:
    text = PLAN.replace("{verify}", "true").replace("- `src/app.py`", "- `src/ap.py`")
    make_plan(repo, text=text)
    line = text.splitlines().index("- `src/ap.py`") + 1
    r = cli("tasks", cwd=repo)
    assert r.code == 0
    assert (
        f"TASKS.md:{line}: warning: TASK-002: scope entry 'src/ap.py' matches no file yet "
        "(fine for a file the task creates; otherwise check the spelling)"
    ) in r.stderr
    # a completed task's scope is history, not checked
    assert "'src/audit.py'" not in r.stderr


def test_no_tasks_file(repo: Path, cli) -> None:
    r = cli("tasks", cwd=repo)
    assert r.code == 2
    assert "TASKS.md does not exist" in r.stderr
    assert "fix: write the task plan first" in r.stderr


def test_stats_after_dispatches(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    assert cli("tasks", "--stats", cwd=repo).stderr.strip() == "no dispatches recorded yet"
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    codex_edits(stubs, {"src/app.py": "broken\n"}, times=1)
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0

    r = cli("tasks", "--stats", cwd=repo)
    assert r.code == 0
    assert (
        "dispatches 1 · attempts 2 · first-attempt success 0/1 (0%) · exhausted caps 0" in r.stderr
    )
    data = json.loads(cli("tasks", "--stats", "--json", cwd=repo).stdout)
    assert data["by_role"]["corrector"]["verified"] == 1
    assert data["tokens"]["attempts_with_usage"] == 2


def test_outside_a_repository(tmp_path: Path, cli) -> None:
    r = cli("tasks", cwd=tmp_path)
    assert r.code == 3
    assert "is not inside a git repository" in r.stderr
