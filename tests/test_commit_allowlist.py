"""A secret silenced by an allowlist pragma in the change is the user's call, at the commit's
approval on a terminal, and the decision is written to the commit's approval record (issue 17).
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from plan_build.core import config, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.ui import Console
from plan_build.delivery import baseline, commit
from plan_build.delivery import verify as verify_mod
from tests.support.gitcmd import git
from tests.support.interaction import ScriptedInteraction
from tests.support.tokens import aws_key, github_token

PRAGMA_LINE = 'FIXTURE_KEY = "{key}"  # pragma: allowlist secret\n'


def session_with_pragma(repo: Path) -> verify_mod.Report:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s")
    (repo / "fixture.py").write_text("x = 1\n" + PRAGMA_LINE.format(key=aws_key()))
    report = verify_mod.run(r, baseline.load(r, "s"), config=config.load(repo), env={})
    assert [c.id for c in report.checks if c.failed] == ["secrets.allowlisted"]
    return report


def do_commit(
    repo: Path, answers: list[str], *, interactive: bool = True
) -> tuple[commit.Outcome, ScriptedInteraction, str]:
    r = gitrepo.discover(repo)
    ui = ScriptedInteraction(answers=answers, interactive=interactive)
    out = io.StringIO()
    outcome = commit.run(
        r,
        baseline.load(r, "s"),
        ui=ui,
        console=Console(out),
        env=dict(os.environ),
        message="Add fixture",
    )
    return outcome, ui, out.getvalue()


def approval_record(repo: Path) -> dict[str, object]:
    path = repo / ".git/plan-build/sessions/s/commit-approval.json"
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_accepting_the_allowlisted_secret_at_the_terminal_commits_and_records_it(
    repo: Path,
) -> None:
    session_with_pragma(repo)

    outcome, ui, shown = do_commit(repo, ["y", "y"])

    assert git(repo, "rev-parse", "HEAD").strip() == outcome.commit
    assert "fixture.py:2 (AWS Access Key)" in shown
    assert aws_key() not in shown
    assert any("allowlist" in q for q in ui.asked)
    record = approval_record(repo)
    assert record["accepted_allowlisted"] == [
        {"path": "fixture.py", "line": 2, "type": "AWS Access Key"}
    ]
    assert record["confirmed_on_terminal"] is True
    assert record["tree"] == outcome.plan.change.tree
    assert aws_key() not in json.dumps(record)


def test_declining_the_allowlisted_secret_commits_nothing(repo: Path) -> None:
    session_with_pragma(repo)
    head = git(repo, "rev-parse", "HEAD")

    with pytest.raises(PlanBuildError) as err:
        do_commit(repo, ["n"])

    assert err.value.code == ExitCode.APPROVAL
    assert git(repo, "rev-parse", "HEAD") == head
    assert not (repo / ".git/plan-build/sessions/s/commit-approval.json").exists()


def test_without_a_terminal_the_allowlisted_secret_cannot_be_accepted(repo: Path) -> None:
    session_with_pragma(repo)
    head = git(repo, "rev-parse", "HEAD")

    with pytest.raises(PlanBuildError) as err:
        do_commit(repo, [], interactive=False)

    assert err.value.code == ExitCode.APPROVAL
    assert git(repo, "rev-parse", "HEAD") == head


def test_an_agent_cannot_accept_it(repo: Path) -> None:
    session_with_pragma(repo)
    r = gitrepo.discover(repo)

    with pytest.raises(PlanBuildError) as err:
        commit.run(
            r,
            baseline.load(r, "s"),
            ui=ScriptedInteraction(answers=["y", "y"]),
            console=Console(io.StringIO()),
            env={**os.environ, "CLAUDECODE": "1"},
            message="Add fixture",
        )

    assert err.value.code == ExitCode.APPROVAL


def test_a_secret_outside_the_allowlist_still_blocks_the_commit(repo: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s")
    (repo / "fixture.py").write_text(PRAGMA_LINE.format(key=aws_key()))
    (repo / "leak.py").write_text(f'T = "{github_token()}"\n')
    report = verify_mod.run(r, baseline.load(r, "s"), config=config.load(repo), env={})
    assert {c.id for c in report.checks if c.failed} == {"secrets.scan", "secrets.allowlisted"}

    with pytest.raises(PlanBuildError) as err:
        do_commit(repo, ["y", "y"])

    assert err.value.code == ExitCode.BLOCKED
    assert "secrets.scan" in err.value.what


def test_an_ordinary_commit_writes_an_approval_record_without_acceptances(repo: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s")
    (repo / "app.py").write_text("x = 1\n")
    report = verify_mod.run(r, baseline.load(r, "s"), config=config.load(repo), env={})
    assert report.ok

    outcome, ui, _ = do_commit(repo, ["y"])

    assert len(ui.asked) == 1  # only the commit question
    record = approval_record(repo)
    assert record["accepted_allowlisted"] == []
    assert record["tree"] == outcome.plan.change.tree


def test_cli_verify_says_the_allowlisted_secret_is_decided_at_commit(repo: Path, cli) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s")
    (repo / "fixture.py").write_text(PRAGMA_LINE.format(key=aws_key()))

    r = cli("verify", cwd=repo, env={"PLAN_BUILD_SESSION": "s"})

    assert r.code == ExitCode.BLOCKED
    assert "secrets.allowlisted" in r.stderr
    assert "plan-build commit" in r.stderr
    assert aws_key() not in r.stderr + r.stdout
    assert os.path.exists(repo / ".git/plan-build/sessions/s/verify.json")


def test_on_a_real_terminal_enter_declines_and_yes_accepts(repo: Path) -> None:
    from tests.support.pty_run import run_on_pty

    session_with_pragma(repo)
    env = {**os.environ, "PLAN_BUILD_SESSION": "s"}
    argv = [sys.executable, "-m", "plan_build", "commit", "--message", "Add fixture"]
    question = "recording that in the commit's approval record?"

    declined = run_on_pty(argv, cwd=repo, env=env, typed=[(question, "\n")])
    assert declined.code == ExitCode.APPROVAL, declined.output
    assert "fixture.py:2 (AWS Access Key)" in declined.output
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"

    done = run_on_pty(
        argv, cwd=repo, env=env, typed=[(question, "y\n"), ("Nothing is pushed.", "y\n")]
    )
    assert done.code == 0, done.output
    assert aws_key() not in done.output
    assert approval_record(repo)["accepted_allowlisted"] == [
        {"path": "fixture.py", "line": 2, "type": "AWS Access Key"}
    ]
