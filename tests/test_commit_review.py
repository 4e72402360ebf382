"""The commit honours plan-build's review rounds: only an approval of exactly this change
lets it through, and review files are never part of the commit."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from plan_build.core import config, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.ui import Console
from plan_build.delivery import baseline, commit
from plan_build.delivery import verify as verify_mod
from tests.support.gitcmd import git
from tests.support.interaction import ScriptedInteraction
from tests.support.reviewkit import CLEAN, claude_session, codex_rule, rabbit_agent, rabbit_complete


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    (repo.parent / "plan.md").write_text("# Plan\n\n1. Add app.py.\n")
    claude_session(private_home, repo)
    baseline.capture(gitrepo.discover(repo), session_id="s1")
    return repo


def clean_reviews(stubs) -> None:
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)


def commit_now(repo: Path) -> commit.Outcome:
    r = gitrepo.discover(repo)
    base = baseline.current(r, {})
    report = verify_mod.run(r, base, config=config.load(repo), env=dict(os.environ))
    assert report.ok, [c for c in report.checks if c.failed]
    return commit.run(
        r,
        base,
        ui=ScriptedInteraction(["y"]),
        console=Console(io.StringIO()),
        env=dict(os.environ),
        message="Add app",
    )


def approved_implementation(cli, stubs, project: Path) -> None:
    clean_reviews(stubs)
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    assert cli("review.approve", cwd=project).code == 0
    (project / "app.py").write_text("print('hi')\n")
    assert cli("review.impl", cwd=project).code == 0
    r = cli("review.approve", cwd=project)
    assert r.code == 0, r.stderr


def test_an_approved_review_of_this_change_lets_the_commit_through(
    cli, stubs, project: Path
) -> None:
    approved_implementation(cli, stubs, project)
    out = commit_now(project)
    files = git(project, "show", "--name-only", "--format=", out.commit).split()
    assert files == ["app.py"]  # .claude/codex-review/ is plan-build's state, never committed
    assert (project / ".claude" / "codex-review").is_dir()


def test_an_edit_after_the_approval_makes_it_stale(cli, stubs, project: Path) -> None:
    approved_implementation(cli, stubs, project)
    (project / "app.py").write_text("print('changed after review')\n")
    head = git(project, "rev-parse", "HEAD")
    with pytest.raises(PlanBuildError) as err:
        commit_now(project)
    assert err.value.code == ExitCode.BLOCKED
    assert "the approval is stale" in err.value.what
    assert git(project, "rev-parse", "HEAD") == head
    # the command it names works (the approved workflow is completed: review.repeat would not)
    assert "(plan-build review.plan)" in err.value.what
    assert cli("review.repeat", cwd=project).code == 2
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0


def test_a_review_still_in_progress_blocks(cli, stubs, project: Path) -> None:
    clean_reviews(stubs)
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    (project / "app.py").write_text("print('hi')\n")
    with pytest.raises(PlanBuildError) as err:
        commit_now(project)
    assert "review blocks the commit" in err.value.what
    assert "still in review" in err.value.what
