"""`plan-build status` and `status --json` are answered without Invoke (docs/adr/0161): the
same screen, JSON, messages and exit codes as the Invoke program gives for the same command,
in every state a session can be in, and the same handling of a bug and of Ctrl-C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gitcmd import git
from tests.test_readonly_imports import ROOT, loaded

PROGRAM = (
    "import sys\n"
    "sys.argv[0] = 'plan-build'\n"
    "from plan_build.program import build_program\n"
    "build_program().run()\n"
)


def both(cwd: Path, *args: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(exit code, stdout, stderr) of `plan-build ARGS` as installed, and through the program."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    runs = []
    for argv in (["-m", "plan_build"], ["-c", PROGRAM]):
        r = subprocess.run(
            [sys.executable, *argv, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        runs.append((r.returncode, r.stdout, r.stderr))
    return runs[0], runs[1]


@pytest.mark.parametrize("args", [("status",), ("status", "--json")])
def test_status_loads_no_invoke(repo: Path, args: tuple[str, ...]) -> None:
    modules, _ = loaded(repo, *args)
    assert sorted(m for m in modules if m.split(".")[0] == "invoke") == []


@pytest.mark.parametrize("args", [("-d", "status"), ("status", "--help"), ("status", "--jsn")])
def test_any_other_spelling_of_status_runs_through_the_program(
    repo: Path, args: tuple[str, ...]
) -> None:
    modules, _ = loaded(repo, *args)
    assert "invoke" in modules


@pytest.mark.parametrize("args", [("status",), ("status", "--json")])
def test_status_says_the_same_as_the_program_in_each_state(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    from tests.support.dispatching import make_plan

    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    seen: list[tuple[int, str, str]] = []
    # not a repository (exit 3, its fix), then no session yet, then a session: empty, with a
    # change, with a TASKS.md, with an unreadable verify record
    for where, prepare in (
        (outside, None),
        (repo, None),
        (repo, "baseline"),
        (repo, "change"),
        (repo, "tasks"),
        (repo, "broken-verify"),
    ):
        if prepare == "baseline":
            out = subprocess.run(
                [sys.executable, "-m", "plan_build", "baseline"],
                cwd=repo,
                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                check=True,
                capture_output=True,
                text=True,
            )
            sid = out.stdout.strip()
        elif prepare == "change":
            (repo / "app.py").write_text("print('hi')\n")
        elif prepare == "tasks":
            make_plan(repo)
        elif prepare == "broken-verify":
            (repo / ".git" / "plan-build" / "sessions" / sid / "verify.json").write_text("{")
        direct, program = both(where, *args)
        assert direct == program, prepare
        seen.append(direct)
    # outside a repository: the preflight error; no session yet: a usage error with its fix
    assert [code for code, _, _ in seen] == [3, 2, 0, 0, 0, 0]
    assert "is not inside a git repository" in seen[0][2]
    if args[-1] == "--json":
        assert json.loads(direct[1])["verify"]["problem"]


def test_status_with_a_moved_head_is_the_same_from_both(repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-m", "plan_build", "baseline"], cwd=repo, env=env, check=True)
    (repo / "later.txt").write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-q", "-m", "moved on")
    direct, program = both(repo, "status")
    assert direct == program
    assert "HEAD moved since the baseline" in direct[2]


@pytest.fixture
def direct_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`plan-build ARGS` through the entry point in this process (so a test can plant a bug)."""

    def run(*args: str, cwd: Path) -> tuple[int, str, str]:
        from plan_build import main

        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["plan-build", *args])
        capsys.readouterr()
        try:
            main.main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_a_bug_in_status_is_one_line_a_crash_log_and_exit_1(
    repo: Path, private_home: Path, monkeypatch: pytest.MonkeyPatch, direct_run
) -> None:
    from plan_build.views import status as view

    def bug(*_: object, **__: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(view, "gather", bug)
    code, out, err = direct_run("status", cwd=repo)
    assert (code, out) == (1, "")
    assert err.startswith("plan-build: internal error: RuntimeError: a bug\n  details: ")
    assert "Traceback" not in err  # -d goes through the program, which prints it
    log = private_home / ".local" / "state" / "plan-build" / "plan-build.log"
    assert "RuntimeError: a bug" in log.read_text()


def test_ctrl_c_in_status_is_exit_130(
    repo: Path, monkeypatch: pytest.MonkeyPatch, direct_run
) -> None:
    from plan_build.views import status as view

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(view, "gather", interrupted)
    assert direct_run("status", "--json", cwd=repo) == (130, "", "\nplan-build: interrupted\n")


def test_the_direct_command_lines_are_every_spelling_status_takes_without_help() -> None:
    """A flag added to the `status` task must be added to main.DIRECT (else that spelling only
    runs slower, through the program): this names the mismatch."""
    from plan_build.commands import namespace
    from plan_build.main import DIRECT

    flags = [a.name for a in namespace["status"].get_arguments()]
    assert flags == ["json"]
    assert sorted(DIRECT) == [("status",), ("status", "--json")]
