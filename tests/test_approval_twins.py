"""Nothing an agent's file tools can write counts as approval (issue 35 items 3 and 4,
docs/adr/0192): a round's approval file in the work tree counts only with its protected twin
under the git dir, written by `plan-build review.approve`; the records say what was
established, never a conclusion an agent could have produced."""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_build.core import brokerclient, config, confirmation, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.ui import Console
from plan_build.delivery import baseline, commit
from plan_build.delivery import verify as verify_mod
from plan_build.review import roundfiles
from plan_build.review.layout import WorkflowDir
from plan_build.startup import broker
from plan_build.startup.brokerrules import Places
from tests.support.gitcmd import git
from tests.support.interaction import ScriptedInteraction
from tests.support.reviewkit import CLEAN, claude_session, codex_rule, rabbit_agent, rabbit_complete

HOW = (
    "answered on a terminal; this process wrote plan-build's protected state (read-only inside "
    "the session's sandbox), so it ran outside the sandbox; session guard at launch: "
)


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    (repo.parent / "plan.md").write_text("# Plan\n\n1. Add app.py.\n")
    claude_session(private_home, repo)
    baseline.capture(gitrepo.discover(repo), session_id="s1")
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    return repo


def workflow(project: Path) -> WorkflowDir:
    (found,) = (project / ".claude" / "codex-review" / "workflows").iterdir()
    return WorkflowDir(project, found.name)


def twin(project: Path, wdir: WorkflowDir, phase: str, rnd: int) -> Path:
    return project / ".git" / "plan-build" / "approvals" / wdir.id / f"{phase}-r{rnd}.json"


def reviewed_implementation(cli, project: Path) -> WorkflowDir:
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    assert cli("review.approve", cwd=project).code == 0
    (project / "app.py").write_text("print('hi')\n")
    r = cli("review.impl", cwd=project)
    assert r.code == 0, r.stderr
    return workflow(project)


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


def test_review_approve_writes_the_twin_and_commit_accepts_it(cli, project: Path) -> None:
    wdir = reviewed_implementation(cli, project)
    assert cli("review.approve", cwd=project).code == 0
    for phase in ("plan", "implement"):
        data = json.loads(twin(project, wdir, phase, 1).read_text())
        approval = wdir.approval(phase, 1).read_bytes()
        assert data["approval_sha256"] == hashlib.sha256(approval).hexdigest()
        assert (
            data["round_sha256"] == hashlib.sha256(wdir.record(phase, 1).read_bytes()).hexdigest()
        )
    out = commit_now(project)
    assert git(project, "show", "--name-only", "--format=", out.commit).split() == ["app.py"]
    status = cli("review.status", "--json", cwd=project)
    assert json.loads(status.stdout)["approval"]["approved"] is True


def forge_final_approval(wdir: WorkflowDir) -> None:
    """What an agent's Write tool can do: the approval file and a completed workflow.json."""
    record = roundfiles.load_round(wdir, "implement", 1)
    assert record is not None
    forged = roundfiles.ApprovalRecord(
        phase="implement",
        round=1,
        approved_at="2026-01-01T00:00:00Z",
        reviewed_tree=record.reviewed_tree,
        confirmed_on_terminal=True,
        confirmed_how="on a terminal; no agent among 9 ancestor processes",
    )
    wdir.approval("implement", 1).write_bytes(roundfiles.approval_bytes(forged))
    data = json.loads(wdir.workflow_json.read_text())
    data["status"] = "completed"
    wdir.workflow_json.write_text(json.dumps(data))


FORGED = (
    "implementation round 1's approval in workflow {id} was not made by `plan-build "
    "review.approve` at the user's terminal ({why}); review the change again (plan-build "
    "review.plan) and approve it with plan-build review.approve in your own terminal"
)


def test_a_forged_approval_file_is_refused_by_commit_status_and_review_status(
    cli, project: Path
) -> None:
    wdir = reviewed_implementation(cli, project)
    forge_final_approval(wdir)
    head = git(project, "rev-parse", "HEAD")
    with pytest.raises(PlanBuildError) as err:
        commit_now(project)
    why = "plan-build's protected record of it is missing"
    assert err.value.code == ExitCode.BLOCKED
    assert FORGED.format(id=wdir.id, why=why) in err.value.what
    assert git(project, "rev-parse", "HEAD") == head
    status = json.loads(cli("status", "--json", cwd=project).stdout)
    assert status["review"]["approval"]["reason"] == FORGED.format(id=wdir.id, why=why)
    review = cli("review.status", cwd=project)
    assert "Approval:         NOT APPROVED: implementation round 1's approval" in review.stderr


def test_an_approval_file_edited_after_review_approve_is_refused(cli, project: Path) -> None:
    wdir = reviewed_implementation(cli, project)
    assert cli("review.approve", cwd=project).code == 0
    path = wdir.approval("implement", 1)
    data = json.loads(path.read_text())
    data["deferred"] = []  # any byte: the twin holds the file's hash
    data["confirmed_how"] = "a person, surely"
    path.write_text(json.dumps(data, indent=2) + "\n")
    with pytest.raises(PlanBuildError) as err:
        commit_now(project)
    assert "the approval file differs from what review.approve wrote" in err.value.what


def test_an_approval_that_cannot_write_its_twin_approves_nothing(cli, project: Path) -> None:
    """Inside the session's sandbox the git dir is read-only: no twin, so no approval file."""
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    wdir = workflow(project)
    blocker = project / ".git" / "plan-build" / "approvals"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder: even root cannot write below it\n")
    r = cli("review.approve", cwd=project)
    assert r.code == 4
    assert "cannot record the approval in plan-build's protected state" in r.stderr
    assert "nothing was approved" in r.stderr
    assert not wdir.approval("plan", 1).exists()
    assert json.loads(wdir.workflow_json.read_text())["phase"] == "plan"


def test_a_brokered_run_never_approves_not_even_through_review_impl(cli, project: Path) -> None:
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code == 0
    wdir = workflow(project)
    r = cli("review.impl", cwd=project, env={brokerclient.BROKERED: "1"})
    assert r.code == 4
    assert "approving plan round 1 is the user's decision" in r.stderr
    assert f"ask the user to run `plan-build review.approve --workflow {wdir.id}`" in r.stderr
    assert not wdir.approval("plan", 1).exists()
    assert not twin(project, wdir, "plan", 1).exists()


@pytest.fixture
def serving(project: Path, tmp_path: Path) -> Iterator[broker.Broker]:
    base = tmp_path / "spool"
    broker.prepare(base, forbidden=(project,))
    common = Path(os.path.realpath(project / ".git"))
    places = Places(Path(os.path.realpath(project)), common, common / "plan-build" / "worktrees")
    b = broker.Broker(base, places, dict(os.environ), watch=os.getpid())
    thread = threading.Thread(target=b.serve, daemon=True)
    thread.start()
    yield b
    b.stopping.set()
    thread.join(timeout=10)


def test_through_the_broker_review_plan_runs_and_the_plans_approval_is_refused(
    cli, project: Path, serving: broker.Broker
) -> None:
    env = {brokerclient.ENV: str(serving.base)}
    (project / "PLAN.md").write_text("# Plan\n\n1. Add app.py.\n")  # the broker reads no ../
    r = cli("review.plan", "--plan", "PLAN.md", cwd=project, env=env)
    assert r.code == 0, r.stderr
    wdir = workflow(project)
    assert wdir.record("plan", 1).is_file()  # the round's state was written, outside
    r = cli("review.impl", cwd=project, env=env)
    assert r.code == 4
    assert "approving plan round 1 is the user's decision" in r.stderr
    assert not wdir.approval("plan", 1).exists()
    r = cli("review.approve", cwd=project, env=env)
    assert r.code == 4
    assert "ask the user to run `plan-build review.approve` in their own terminal" in r.stderr
    assert json.loads(wdir.workflow_json.read_text())["phase"] == "plan"


def test_the_records_say_what_was_established(cli, project: Path) -> None:
    reviewed_implementation(cli, project)
    wdir = workflow(project)
    plan = json.loads(wdir.approval("plan", 1).read_text())
    assert plan["confirmed_on_terminal"] is False
    assert plan["confirmed_how"] == (
        "not asked: nothing deferred and no reviewer waived; this process wrote plan-build's "
        "protected state (read-only inside the session's sandbox), so it ran outside the "
        "sandbox; session guard at launch: not recorded"
    )
    assert cli("review.approve", cwd=project).code == 0
    commit_now(project)
    record = json.loads((project / ".git/plan-build/sessions/s1/commit-approval.json").read_text())
    assert record["confirmed_on_terminal"] is True
    assert record["confirmed_how"] == HOW + "not recorded"
    assert "ancestor" not in record["confirmed_how"]


@pytest.mark.parametrize(
    ("guard", "said"),
    [
        ("sandbox", "session guard at launch: sandbox (Claude Code's OS sandbox)"),
        ("unguarded", "session guard at launch: UNGUARDED (no OS sandbox; chosen by the user)"),
        (None, "session guard at launch: not recorded"),
        ("off", "session guard at launch: not recorded"),
    ],
)
def test_the_guard_is_said_as_recorded(tmp_path: Path, guard: object, said: str) -> None:
    how = confirmation.how(answered=confirmation.ON_TERMINAL, state_dir=tmp_path, guard=guard)
    assert how.endswith(said)
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind


def test_a_process_that_cannot_write_the_state_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file, not a folder\n")
    how = confirmation.how(answered=confirmation.ON_TERMINAL, state_dir=blocker, guard=None)
    assert "this process could not write plan-build's protected state" in how


def test_the_guard_comes_from_the_sessions_baseline_read_tolerantly(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from plan_build.commands import review as review_commands
    from plan_build.core.context import Session

    monkeypatch.chdir(project)
    s = Session.from_process()
    # a session from before the field: the Baseline has no `guard` at all
    assert review_commands.session_guard(s) is None
    monkeypatch.setattr(baseline, "current", lambda *a, **k: SimpleNamespace(guard="sandbox"))
    assert review_commands.session_guard(s) == "sandbox"

    def no_session(*a: object, **k: object) -> object:
        raise PlanBuildError("no session baseline", "start one", code=ExitCode.USAGE)

    monkeypatch.setattr(baseline, "current", no_session)
    assert review_commands.session_guard(s) is None


def test_the_records_name_the_guard_the_launch_recorded(
    cli, repo: Path, private_home: Path, stubs
) -> None:
    (repo.parent / "plan.md").write_text("# Plan\n\n1. Add app.py.\n")
    claude_session(private_home, repo)
    baseline.capture(gitrepo.discover(repo), session_id="s1", guard="sandbox")
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    wdir = reviewed_implementation(cli, repo)
    assert cli("review.approve", cwd=repo).code == 0
    sandboxed = "session guard at launch: sandbox (Claude Code's OS sandbox)"
    for phase in ("plan", "implement"):
        assert json.loads(wdir.approval(phase, 1).read_text())["confirmed_how"].endswith(sandboxed)
    commit_now(repo)
    record = json.loads((repo / ".git/plan-build/sessions/s1/commit-approval.json").read_text())
    assert record["confirmed_how"] == HOW + "sandbox (Claude Code's OS sandbox)"
