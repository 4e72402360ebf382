"""`review.plan` copies the plan into `artifacts/plan.md` and Codex's prompt, so a plan holding a
credential is refused, naming the line, before anything is written or sent (issue 18.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.reviewkit import CLEAN, claude_session, codex_rule, only_workflow
from tests.support.tokens import github_token

PLAN = "# Add pagination\n\n1. Add `limit` to GET /audit.\n2. Test it.\n"


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    claude_session(private_home, repo)
    stubs.rule("codex", codex_rule(CLEAN))
    return repo


def test_a_plan_holding_a_token_is_refused_naming_the_line(cli, stubs, project: Path) -> None:
    (project.parent / "plan.md").write_text(
        PLAN + f"3. Call the API with `Authorization: token {github_token()}`.\n"
    )

    r = cli("review.plan", "--plan", "../plan.md", cwd=project)

    assert r.code == 2
    assert "plan.md:5" in r.stderr
    assert "GitHub Token" in r.stderr
    assert github_token() not in r.stderr + r.stdout
    assert not (project / ".claude").exists()  # no workflow, no artifacts/plan.md
    assert stubs.calls("codex") == []


def test_a_plan_holding_a_secret_environment_value_is_refused(cli, stubs, project: Path) -> None:
    value = "s3cr3t-value-for-tests-42"
    (project.parent / "plan.md").write_text(PLAN + f"3. Log in with {value}.\n")

    r = cli("review.plan", "--plan", "../plan.md", cwd=project, env={"SHOP_PASSWORD": value})

    assert r.code == 2
    assert "plan.md:5" in r.stderr
    assert "$SHOP_PASSWORD" in r.stderr
    assert value not in r.stderr


def test_replacing_the_plan_with_one_holding_a_token_is_refused(cli, stubs, project: Path) -> None:
    (project.parent / "plan.md").write_text(PLAN)
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    wf = only_workflow(project)
    before = (wf / "artifacts" / "plan.md").read_bytes()
    (project.parent / "plan2.md").write_text(f"# New\ntoken = {github_token()}\n")

    r = cli("review.plan", "--plan", "../plan2.md", cwd=project)

    assert r.code == 2
    assert "plan2.md:2" in r.stderr
    assert (wf / "artifacts" / "plan.md").read_bytes() == before


def test_a_clean_plan_is_reviewed(cli, stubs, project: Path) -> None:
    (project.parent / "plan.md").write_text(PLAN)

    r = cli("review.plan", "--plan", "../plan.md", cwd=project)

    assert r.code == 0, r.stderr
    assert (only_workflow(project) / "artifacts" / "plan.md").read_text() == PLAN
