"""Approval gates refuse inside an agent session, even when the agent fakes a terminal with
`script` and unsets CLAUDECODE: any ancestor process that is Claude Code or Codex is enough.

The agent is simulated by a stub named like the real program (`claude`, `codex`) that runs the
command as its child, the way Claude's Bash tool does; the same command without that parent is
the control (a person at a terminal), so each test shows the ancestry is what refuses.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plan_build.core import config, gitrepo, interact
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline
from plan_build.delivery import verify as verify_mod
from tests.support.gitcmd import git
from tests.support.reviewkit import PLAN_REVIEW, codex_rule, only_workflow
from tests.support.sessions import make_session

PB = shlex.join([sys.executable, "-m", "plan_build"])
FAKED_TERMINAL = "printf 'y\\n' | env -u CLAUDECODE script -qec {cmd} /dev/null"


def agent(tmp_path: Path, name: str) -> Path:
    """An executable called `name` that runs its arguments as a child (it does not exec)."""
    path = tmp_path / "agent-bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text('#!/bin/sh\n"$@"\n')
    path.chmod(0o755)
    return path


def run(cwd: Path, shell: str, parent: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["sh", "-c", shell]
    return subprocess.run(
        [str(parent), *argv] if parent else argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def faked(cmd: str) -> str:
    return FAKED_TERMINAL.format(cmd=shlex.quote(cmd))


@pytest.fixture
def verified(repo: Path) -> Path:
    (repo / "app.py").write_text("def f():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "app")
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    (repo / "app.py").write_text("def f():\n    return 2\n")
    report = verify_mod.run(r, base, config=config.load(repo), env=dict(os.environ))
    assert report.ok, [c for c in report.checks if c.failed]
    return repo


def commits(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD").strip())


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_an_agent_cannot_commit_through_a_faked_terminal(
    verified: Path, tmp_path: Path, name: str
) -> None:
    before = commits(verified)
    r = run(verified, faked(f"{PB} commit --message agent"), agent(tmp_path, name))

    assert commits(verified) == before, r.stdout
    assert "the commit needs the user's own approval" in r.stdout
    assert f"({name}) is {interact.AGENT_PROGRAMS[name]}" in r.stdout
    assert 'ask the user to run `plan-build commit --message "…"`' in r.stdout
    assert "a `!` line in Claude does not count" in r.stdout


def test_the_same_faked_terminal_commits_for_a_person(verified: Path) -> None:
    before = commits(verified)
    r = run(verified, faked(f"{PB} commit --message person"))

    assert commits(verified) == before + 1, r.stdout
    approved = baseline.load(gitrepo.discover(verified), "s").approved or ""
    assert approved.startswith("answered on a terminal; this process wrote plan-build's")


def test_an_agent_environment_gets_the_ask_the_user_text(verified: Path, cli) -> None:
    before = commits(verified)
    r = cli("commit", "--message", "x", cwd=verified, env={"CLAUDECODE": "1"})
    assert r.code == ExitCode.APPROVAL
    assert "(CLAUDECODE is set)" in r.stderr
    assert "ask the user to run `plan-build commit" in r.stderr
    assert "run plan-build commit yourself" not in r.stderr
    assert commits(verified) == before


@pytest.fixture
def deferred_low(repo: Path, stubs, cli) -> Path:
    """A plan round whose only open point is a deferred LOW finding (needs the user)."""
    (repo.parent / "plan.md").write_text("# Plan\n\n1. Do it.\n")
    stubs.rule("codex", codex_rule(PLAN_REVIEW))
    r = cli("review.plan", "--plan", "../plan.md", cwd=repo)
    assert r.code == 0, r.stderr  # reviewed, with findings (ADR 0046)
    wf = only_workflow(repo)
    (wf / "artifacts" / "plan-findings-r1.md").write_text(
        "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: DEFER\n"
    )
    return wf


def test_an_agent_cannot_approve_a_deferral_through_a_faked_terminal(
    repo: Path, deferred_low: Path, tmp_path: Path
) -> None:
    r = run(repo, faked(f"{PB} review.approve"), agent(tmp_path, "claude"))

    assert json.loads((deferred_low / "workflow.json").read_text())["phase"] == "plan"
    assert not (deferred_low / "artifacts" / "plan-approval-r1.json").exists()
    assert "approving plan round 1 with these needs the user's own approval" in r.stdout
    assert (
        f"ask the user to run `plan-build review.approve --workflow {deferred_low.name}`"
        in r.stdout
    )


def test_a_person_approves_the_deferral_and_the_record_says_how(
    repo: Path, deferred_low: Path
) -> None:
    r = run(repo, faked(f"{PB} review.approve"))

    assert json.loads((deferred_low / "workflow.json").read_text())["phase"] == "implement", (
        r.stdout
    )
    record = json.loads((deferred_low / "artifacts" / "plan-approval-r1.json").read_text())
    assert record["confirmed_on_terminal"] is True
    # what was established, not a conclusion about ancestry an agent could arrange (ADR 0192)
    assert record["confirmed_how"] == (
        "answered on a terminal; this process wrote plan-build's protected state (read-only "
        "inside the session's sandbox), so it ran outside the sandbox; session guard at launch: "
        "not recorded"
    )


def test_status_of_a_deferral_inside_an_agent_says_to_ask_the_user(
    repo: Path, deferred_low: Path, cli
) -> None:
    r = cli("review", cwd=repo, env={"CLAUDECODE": "1"})
    assert "ask the user to run plan-build review.approve" in r.stderr, r.stderr
    outside = cli("review", cwd=repo)
    assert f"next: plan-build review.approve --workflow {deferred_low.name}" in outside.stderr


def test_verify_tells_an_agent_to_ask_the_user(verified: Path, cli) -> None:
    inside = cli("verify", cwd=verified, env={"CLAUDECODE": "1"})
    outside = cli("verify", cwd=verified)
    assert inside.code == outside.code == 0, inside.stderr
    assert "verified · next: ask the user to run plan-build commit in a terminal outside" in (
        inside.stderr
    )
    assert "verified · next: plan-build commit\n" in outside.stderr


def _wait_for_argv(pid: int, first: str) -> None:
    """Popen returns once exec has begun, but Linux sets the new argv a moment later (the
    parent wakes when close-on-exec closes its pipe): under load, a read in between sees an
    empty command line. An agent ancestor has long been running, so wait for the argv."""
    import psutil

    for _ in range(500):
        if psutil.Process(pid).cmdline()[:1] == [first]:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never showed argv[0] {first!r}")


def test_the_ancestry_alone_refuses_in_process() -> None:
    """`require_person` with a parent chain that holds a process named codex."""
    child = subprocess.Popen(["codex", "30"], executable="/bin/sleep", stdin=subprocess.DEVNULL)
    try:
        _wait_for_argv(child.pid, "codex")
        with pytest.raises(PlanBuildError) as err:
            interact.require_person({}, what="x", command="y", parents=lambda: [child.pid])
        assert err.value.code == ExitCode.APPROVAL
        how = interact.require_person({}, what="x", command="y", parents=lambda: [os.getpid()])
        assert "among 1 ancestor processes" in how
    finally:
        child.kill()
        child.wait()


def test_identity_and_enhance_approvals_refuse_inside_an_agent(repo: Path) -> None:
    from plan_build.startup import chain, enhance, identity

    session, _, _ = make_session(repo, answers=["y"])
    session.env["CLAUDECODE"] = "1"
    with pytest.raises(PlanBuildError) as err:
        chain.resolve_identity(session, gitrepo.discover(repo), dry_run=False, blockers=[])
    assert err.value.code == ExitCode.APPROVAL
    assert "ask the user to run `plan-build identity --set" in str(err.value)
    assert not (repo / identity.FILENAME).exists()
    with pytest.raises(PlanBuildError) as err:
        enhance.enhance_payload(session, gitrepo.discover(repo), "do it", timeout=5)
    assert err.value.code == ExitCode.APPROVAL
    assert "ask the user to run `plan-build enhance`" in str(err.value)
