"""The session broker (docs/adr/0191): plan-build's own commands that an agent may run, run
outside the sandbox on the agent's behalf; everything that records a person's decision refused.

Real processes throughout: the client is `python -m plan_build` with PLAN_BUILD_BROKER set, the
broker runs real plan-build children in a real git repository."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_build.core import brokerclient, proctree
from plan_build.core.errors import PlanBuildError
from plan_build.startup import broker
from plan_build.startup.brokerrules import Places, judge
from tests.support.gitcmd import git
from tests.support.pty_run import run_on_pty
from tests.support.runcli import Result, run_cli
from tests.support.stubs import Stubs


def _places(repo: Path) -> Places:
    common = Path(os.path.realpath(repo / ".git"))
    return Places(Path(os.path.realpath(repo)), common, common / "plan-build" / "worktrees")


@pytest.fixture
def serving(repo: Path, tmp_path: Path) -> Iterator[broker.Broker]:
    """A broker serving in this test process (its runs are real plan-build processes)."""
    base = tmp_path / "spool"
    broker.prepare(base, forbidden=(repo,))
    b = broker.Broker(base, _places(repo), dict(os.environ), watch=os.getpid())
    thread = threading.Thread(target=b.serve, daemon=True)
    thread.start()
    yield b
    b.stopping.set()
    thread.join(timeout=10)


def via(b: broker.Broker, *args: str, cwd: Path, env: dict[str, str] | None = None) -> Result:
    return run_cli(*args, cwd=cwd, env={brokerclient.ENV: str(b.base), **(env or {})})


def take_baseline(repo: Path) -> str:
    r = run_cli("baseline", "--json", cwd=repo)
    assert r.code == 0, r.stderr
    return str(json.loads(r.stdout)["id"])


def test_status_through_the_broker_says_what_status_says(
    serving: broker.Broker, repo: Path
) -> None:
    sid = take_baseline(repo)
    (repo / "app.py").write_text("print('hi')\n")
    direct = run_cli("status", "--json", cwd=repo)
    brokered = via(serving, "status", "--json", cwd=repo)
    assert brokered.code == direct.code == 0, brokered.stderr
    assert json.loads(brokered.stdout) == json.loads(direct.stdout)
    assert sid in brokered.stdout


def test_verify_through_the_broker_writes_its_record(serving: broker.Broker, repo: Path) -> None:
    sid = take_baseline(repo)
    (repo / "app.py").write_text("print('hi')\n")
    r = via(serving, "verify", cwd=repo / ".")
    record = repo / ".git" / "plan-build" / "sessions" / sid / "verify.json"
    assert record.is_file(), r.stderr
    assert json.loads(record.read_text())["session"] == sid
    assert r.code in (0, 6)  # passed, or a check named what fails: either way it ran


def test_review_status_through_the_broker(serving: broker.Broker, repo: Path) -> None:
    r = via(serving, "review.status", cwd=repo)
    assert r.code == 0, r.stderr
    assert "No active workflow found." in r.stderr


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (("commit", "--message", "x"), "plan-build commit --message x"),
        (("review.approve",), "plan-build review.approve"),
        (("review.done", "--workflow", "w1"), "plan-build review.done --workflow w1"),
        (("identity", "--set", "acme-shop"), "plan-build identity --set acme-shop"),
        (("release.activate", "x"), "plan-build release.activate x"),
    ],
)
def test_a_persons_decision_is_refused_with_what_to_ask(
    serving: broker.Broker, repo: Path, args: tuple[str, ...], command: str
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    r = via(serving, *args, cwd=repo)
    assert r.code == 4
    assert "the user's decision: the session's agent cannot run" in r.stderr
    assert f"ask the user to run `{command}` in their own terminal" in r.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_restore_is_refused_and_checkpoints_named(serving: broker.Broker, repo: Path) -> None:
    r = via(serving, "restore", cwd=repo)
    assert r.code == 4
    assert "only `checkpoints`" in r.stderr


def test_an_unknown_command_or_option_is_refused(serving: broker.Broker, repo: Path) -> None:
    r = via(serving, "frobnicate", cwd=repo)
    assert r.code == 2
    assert "does not run the command 'frobnicate'" in r.stderr
    r = via(serving, "--print-completion-script", "bash", cwd=repo)
    assert r.code == 2
    assert "does not run the option" in r.stderr


def test_help_and_version_are_answered(serving: broker.Broker, repo: Path) -> None:
    r = via(serving, "--version", cwd=repo)
    assert r.code == 0
    assert r.stdout.startswith("plan-build ")


def test_the_agents_environment_does_not_reach_the_run(
    serving: broker.Broker, repo: Path, tmp_path: Path
) -> None:
    sid = take_baseline(repo)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    poisoned = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)}
    direct = run_cli("status", "--json", cwd=repo, env=poisoned)
    assert direct.code != 0  # plan-build alone would act on the other repository
    r = via(serving, "status", "--json", cwd=repo, env=poisoned)
    assert r.code == 0, r.stderr
    assert sid in r.stdout
    assert json.loads(r.stdout)["head"] == git(repo, "rev-parse", "HEAD").strip()


def test_a_path_without_git_does_not_reach_the_run(serving: broker.Broker, repo: Path) -> None:
    take_baseline(repo)
    # the client needs only Python, which it is started with; the run keeps the launch's PATH
    r = via(serving, "status", cwd=repo, env={"PATH": "/nonexistent"})
    assert r.code == 0, r.stderr


def test_a_run_is_marked_as_brokered_and_has_no_broker(repo: Path) -> None:
    env = broker.run_env({"PATH": "/usr/bin", brokerclient.ENV: "/x"})
    assert env == {"PATH": "/usr/bin", brokerclient.BROKERED: "1"}
    tools = repo / "node_modules" / ".bin"
    tools.mkdir(parents=True)
    path = os.pathsep.join([str(tools), "bin", "", "/usr/bin", "/bin"])
    env = broker.run_env({"PATH": path}, _places(repo))
    assert env["PATH"] == os.pathsep.join(["/usr/bin", "/bin"])  # no agent-writable git


def test_a_cwd_outside_the_repository_is_refused(
    serving: broker.Broker, repo: Path, tmp_path: Path
) -> None:
    r = via(serving, "status", cwd=tmp_path)
    assert r.code == 2
    assert f"not in {os.path.realpath(tmp_path)}" in r.stderr or f"not in {tmp_path}" in r.stderr
    r = via(serving, "status", cwd=repo / ".git")
    assert r.code == 2
    assert "only in the repository's work tree or a wave's worktree" in r.stderr


def test_places_allow_the_work_tree_and_wave_worktrees(repo: Path, tmp_path: Path) -> None:
    places = _places(repo)
    wave = repo / ".git" / "plan-build" / "worktrees" / "w1" / "TASK-001"
    wave.mkdir(parents=True)
    (repo / "src").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    assert places.allows(str(repo / "src"))
    assert places.allows(str(wave))
    assert not places.allows(str(repo / ".git" / "hooks"))
    assert not places.allows(str(tmp_path))
    assert not places.allows("relative/path")
    escape = repo / "escape"
    escape.symlink_to(tmp_path)
    assert not places.allows(str(escape))  # resolved, not read as text


def test_judge_reads_the_command_not_its_arguments() -> None:
    assert judge(["review.plan", "--focus", "commit and review.approve"]) is None
    assert judge(["-d", "status"]) is None
    assert judge(["--help", "commit"]) is None  # help is read-only
    assert judge([]) is None
    refused = judge(["identity", "-s", "x"])
    assert refused is not None
    assert refused.code == 4


CHILD = """
import os, subprocess, sys, time
kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(sys.argv[-1], "w").write(f"{os.getpid()} {kid.pid}")
time.sleep(60)
"""


def _wait_for(predicate: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_client_ctrl_c_stops_the_runs_whole_tree(repo: Path, tmp_path: Path) -> None:
    base = tmp_path / "spool"
    broker.prepare(base, forbidden=(repo,))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    pids = tmp_path / "pids"
    b = broker.Broker(
        base, _places(repo), dict(os.environ), os.getpid(), argv0=(sys.executable, str(script))
    )
    thread = threading.Thread(target=b.serve, daemon=True)
    thread.start()
    try:
        client = subprocess.Popen(
            [sys.executable, "-m", "plan_build", "status", str(pids)],
            cwd=repo,
            env={**os.environ, brokerclient.ENV: str(base)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert _wait_for(lambda: pids.exists() and pids.read_text().count(" ") == 1)
        run_pid, kid_pid = (int(p) for p in pids.read_text().split())
        client.send_signal(signal.SIGINT)
        _, err = client.communicate(timeout=20)
        assert client.returncode == 130
        assert b"interrupted" in err
        assert _wait_for(lambda: proctree.create_time(run_pid) is None)
        assert _wait_for(lambda: proctree.create_time(kid_pid) is None)
    finally:
        b.stopping.set()
        thread.join(timeout=10)


def test_the_broker_ends_with_the_process_it_watches(repo: Path, tmp_path: Path) -> None:
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        base, child = broker.start(
            dict(os.environ),
            session_id="s-watch",
            worktree=repo,
            git_dir=repo / ".git",
            state_dir=repo / ".git" / "plan-build",
            watch=watched.pid,
        )
        assert base.is_relative_to(Path(os.environ["XDG_STATE_HOME"]))
        assert oct(base.stat().st_mode & 0o777) == oct(0o700)
        r = run_cli("--version", cwd=repo, env={brokerclient.ENV: str(base)})
        assert r.code == 0, r.stderr
        assert child.exited() is None
        watched.kill()
        watched.wait()
        assert _wait_for(lambda: child.exited() is not None)
        assert not base.exists()
    finally:
        if watched.poll() is None:
            watched.kill()


def test_the_spool_is_never_inside_the_repository(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(repo / ".git" / "state"))
    env = dict(os.environ)
    with pytest.raises(PlanBuildError, match="would be inside"):
        broker.start(
            env,
            session_id="s-in",
            worktree=repo,
            git_dir=repo / ".git",
            state_dir=repo / ".git" / "plan-build",
        )


def test_no_broker_is_one_clear_message(repo: Path, tmp_path: Path) -> None:
    r = run_cli("status", cwd=repo, env={brokerclient.ENV: str(tmp_path / "gone")})
    assert r.code == 6
    assert r.stderr.count("plan-build:") == 1
    assert "broker for this session cannot be reached" in r.stderr
    assert "fix: this command runs through the broker the session's launch started" in r.stderr


def test_a_broker_that_does_not_answer_is_one_clear_message(repo: Path, tmp_path: Path) -> None:
    base = tmp_path / "spool"
    broker.prepare(base, forbidden=(repo,))
    err = io.BytesIO()
    code = brokerclient.forward(
        ["status"], base, cwd=str(repo), out=io.BytesIO(), err=err, claim_timeout=0.3
    )
    assert code == 6
    text = err.getvalue().decode()
    assert "no plan-build broker answered within 0.3s" in text
    assert "fix: the broker the launch started has stopped" in text
    assert list(brokerclient.requests_dir(base).glob("*.json")) == []  # taken back


def test_the_spool_sits_in_the_runtime_dir_when_there_is_one(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "HOME": "/h"}
    assert brokerclient.spool_dir(env, "s1") == tmp_path / "plan-build" / "broker-s1" / "requests"
    env = {"XDG_RUNTIME_DIR": "relative", "HOME": "/h"}
    assert brokerclient.run_base(env, "s1") == Path("/h/.local/state/plan-build/run/broker-s1")


def test_a_broker_that_dies_mid_run_is_one_clear_message(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker SIGKILLed while it runs a command writes no exit code: its heartbeat stops,
    and the client says so instead of waiting for ever."""
    monkeypatch.setattr(brokerclient, "STALE", 0.5)
    base = tmp_path / "spool"
    broker.prepare(base, forbidden=(repo,))
    requests, answers = brokerclient.requests_dir(base), brokerclient.answers_dir(base)

    def claim_then_die() -> None:  # what a broker does before it is killed: claim, then nothing
        while True:
            for request in requests.glob("*.json"):
                (answers / request.name.removesuffix(".json")).mkdir()
                request.unlink()
                return
            time.sleep(0.01)

    threading.Thread(target=claim_then_die, daemon=True).start()
    err = io.BytesIO()
    started = time.monotonic()
    code = brokerclient.forward(["status"], base, cwd=str(repo), out=io.BytesIO(), err=err)
    assert code == 6
    assert "the session's broker stopped while it ran this command" in err.getvalue().decode()
    assert time.monotonic() - started < 5


def test_the_entry_point_reads_the_brokers_variable_by_its_one_name() -> None:
    from plan_build import main
    from plan_build.core import sessionvars

    assert main.BROKER == sessionvars.BROKER == brokerclient.ENV
    assert main.BROKERED == sessionvars.BROKERED == brokerclient.BROKERED


def test_report_out_is_refused_through_the_broker(serving: broker.Broker, repo: Path) -> None:
    """`report --out ~/.bashrc` would write outside the sandbox wherever the agent points."""
    bashrc = Path(os.environ["HOME"]) / ".bashrc"
    for args in (("--out", str(bashrc)), (f"--out={bashrc}",), ("-o", "x.md"), ("-ox.md",)):
        r = via(serving, "report", "--format", "md", *args, cwd=repo)
        assert r.code == 2, args
        assert "does not run `plan-build report --out`" in r.stderr or "report -o`" in r.stderr
    assert not bashrc.exists()


def test_review_plan_reads_a_plan_only_from_the_work_tree_or_claudes_plans(
    repo: Path, tmp_path: Path
) -> None:
    claude_plans = tmp_path / "claude" / "plans"
    claude_plans.mkdir(parents=True)
    common = Path(os.path.realpath(repo / ".git"))
    places = Places(
        Path(os.path.realpath(repo)),
        common,
        common / "plan-build" / "worktrees",
        plans=(Path(os.path.realpath(claude_plans)),),
    )
    (repo / "docs").mkdir()
    outside = tmp_path / "secret.md"
    link = repo / "docs" / "plan.md"
    link.symlink_to(outside)
    cwd = str(repo / "docs")
    assert places.path_refusal(["review.plan", "--plan", "../README.md"], cwd) is None
    assert places.path_refusal(["review.plan", f"--plan={claude_plans}/p.md"], cwd) is None
    for bad in (["--plan", str(outside)], ["-p", "plan.md"], ["--plan", "../.git/config"]):
        refusal = places.path_refusal(["review.plan", *bad], cwd)
        assert refusal is not None, bad
        assert "only with a path in the repository's work tree" in refusal.what
    assert places.path_refusal(["review.plan", "--focus", "/etc/passwd"], cwd) is None


class _ClosedPipe(io.BytesIO):
    def write(self, data: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_goes_away_does_not_crash_the_client(
    serving: broker.Broker, repo: Path
) -> None:
    """`plan-build status | head -1`: the run still ends and its exit code comes back."""
    err = io.BytesIO()
    code = brokerclient.forward(
        ["--version"], serving.base, cwd=str(repo), out=_ClosedPipe(), err=err
    )
    assert code == 0
    assert err.getvalue() == b""


TYPED_REQUEST = [("> ", "Add pagination.\n"), ("> ", "EOF\n")]


def test_a_launched_session_reaches_plan_build_through_its_broker(
    ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    """End to end: `plan-build plan` starts the broker and becomes (stub) Claude, whose tool
    command `plan-build ...` is answered by the broker; the broker ends with Claude."""
    out = tmp_path / "out"
    out.mkdir()
    script = (
        f"{sys.executable} -m plan_build status --json > {out}/status.json; echo $? > {out}/s; "
        f"{sys.executable} -m plan_build review.approve 2> {out}/approve.err; echo $? > {out}/a; "
        f'echo "$PLAN_BUILD_BROKER" > {out}/spool'
    )
    stubs.rule("claude", {"match": ["--settings"], "run": ["sh", "-c", script]})
    full = {**os.environ, "NO_COLOR": "1"}
    r = run_on_pty(
        [sys.executable, "-m", "plan_build", "plan"], cwd=ready, env=full, typed=TYPED_REQUEST
    )
    assert r.code == 0, r.output
    launch = next(c for c in stubs.calls("claude") if c["argv"][:1] == ["--settings"])
    sid = launch["env"]["PLAN_BUILD_SESSION"]
    assert (out / "s").read_text().strip() == "0"
    assert sid in (out / "status.json").read_text()
    assert (out / "a").read_text().strip() == "4"
    assert (
        "the session's agent cannot run `plan-build review.approve`"
        in (out / "approve.err").read_text()
    )
    spool = Path((out / "spool").read_text().strip())
    assert spool == brokerclient.run_base(os.environ, sid)
    assert _wait_for(lambda: not spool.exists())  # Claude ended: so did its broker


def test_a_killed_brokers_spool_is_swept_at_the_next_launch(repo: Path, tmp_path: Path) -> None:
    parent = tmp_path / "run"
    dead, live, fresh = parent / "broker-dead", parent / "broker-live", parent / "broker-new"
    for spool in (dead, live):
        broker.prepare(spool, forbidden=(repo,))
        (spool / "alive").touch()
    long_ago = time.time() - 3600
    os.utime(dead / "alive", (long_ago, long_ago))
    os.utime(dead, (long_ago, long_ago))
    broker.prepare(fresh, forbidden=(repo,))
    assert not dead.exists()
    assert live.is_dir()
    assert fresh.is_dir()


def test_a_run_checks_its_own_cwd_after_it_started(repo: Path, tmp_path: Path) -> None:
    """The broker checked the folder it was asked for; a folder swapped for a link after that
    check would start the run elsewhere: the run itself refuses to work there."""
    marked = {brokerclient.BROKERED: _places(repo).as_env()}
    r = run_cli("status", cwd=tmp_path, env=marked)
    assert r.code == 2
    assert "runs plan-build only in the repository's work tree" in r.stderr
    assert run_cli("--version", cwd=repo, env=marked).code == 0
