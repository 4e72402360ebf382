"""The launch hands Claude Code the session's sandbox, and without it launches only when the
person asks for it in words (docs/adr/0190)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from plan_build.core import gitrepo, guard
from plan_build.delivery import baseline
from tests.support.pty_run import PtyResult, run_on_pty
from tests.support.stubs import Stubs

REQUEST = [("> ", "Add the audit log\n"), ("> ", "EOF\n")]


def plan_build(cwd: Path, *args: str, typed=(), env: dict[str, str] | None = None) -> PtyResult:
    full = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return run_on_pty([sys.executable, "-m", "plan_build", *args], cwd=cwd, env=full, typed=typed)


def launched(stubs: Stubs) -> list[dict]:
    return [c for c in stubs.calls("claude") if c["argv"][:1] not in (["--version"], ["plugin"])]


def test_the_session_runs_in_claudes_sandbox_with_git_state_read_only(
    ready: Path, stubs: Stubs
) -> None:
    r = plan_build(ready, "plan", typed=REQUEST)

    assert r.code == 0, r.output
    [call] = launched(stubs)
    layer = json.loads(Path(call["argv"][1]).read_text())
    box = layer["sandbox"]
    assert box["enabled"] is True
    assert box["failIfUnavailable"] is True
    assert box["allowUnsandboxedCommands"] is False
    git_dir = str((ready / ".git").resolve())
    assert git_dir in box["filesystem"]["denyWrite"]  # absolute: `./.git` did not apply
    assert all(Path(p).is_absolute() for p in box["filesystem"]["denyWrite"])
    assert "excludedCommands" not in box  # plan-build is never let out of it
    assert call["env"]["PLAN_BUILD_GUARD"] == "sandbox"
    sid = call["env"]["PLAN_BUILD_SESSION"]
    found = guard.read_guard(ready / ".git" / "plan-build", sid)
    assert found is not None
    assert found.mode == "sandbox"
    assert found.policy is not None
    assert baseline.load(gitrepo.discover(ready), sid).guard == "sandbox"


def test_without_bubblewrap_the_launch_stops_with_the_fix(ready: Path, stubs: Stubs) -> None:
    # a PATH that has everything the launch needs except bubblewrap and socat
    bin_dir = ready.parent / "no-bwrap-bin"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for entry in Path(directory).glob("*") if Path(directory).is_dir() else []:
            if entry.name not in ("bwrap", "socat") and not (bin_dir / entry.name).exists():
                (bin_dir / entry.name).symlink_to(entry)
    r = plan_build(ready, "plan", typed=[], env={"PATH": str(bin_dir)})

    assert r.code == 3, r.output
    assert "bubblewrap and socat not installed" in r.output
    assert "plan-build setup" in r.output
    assert "--unguarded" in r.output
    assert launched(stubs) == []


def test_unguarded_is_asked_for_in_words_and_recorded(ready: Path, stubs: Stubs) -> None:
    typed = [*REQUEST, ("Type `run unguarded`", "run unguarded\n")]
    r = plan_build(ready, "plan", "--unguarded", typed=typed)

    assert r.code == 0, r.output
    [call] = launched(stubs)
    layer = json.loads(Path(call["argv"][1]).read_text())
    assert "sandbox" not in layer
    assert call["env"]["PLAN_BUILD_GUARD"] == "unguarded"
    sid = call["env"]["PLAN_BUILD_SESSION"]
    found = guard.read_guard(ready / ".git" / "plan-build", sid)
    assert found is not None
    assert found.mode == "unguarded"
    assert found.how.startswith("typed `run unguarded` on a terminal")
    assert baseline.load(gitrepo.discover(ready), sid).guard == "unguarded"


def test_a_keypress_does_not_launch_unguarded(ready: Path, stubs: Stubs) -> None:
    typed = [*REQUEST, ("Type `run unguarded`", "y\n")]
    r = plan_build(ready, "plan", "--unguarded", typed=typed)

    assert r.code == 4, r.output
    assert "the unguarded launch was not confirmed" in r.output
    assert launched(stubs) == []
    assert not list((ready / ".git" / "plan-build").glob("guards/*.json"))


def test_an_agent_cannot_launch_unguarded(ready: Path, stubs: Stubs) -> None:
    typed = [*REQUEST]
    r = plan_build(ready, "plan", "--unguarded", typed=typed, env={"CLAUDECODE": "1"})

    assert r.code == 4, r.output
    assert "ask the user to run `plan-build plan --unguarded`" in r.output
    assert launched(stubs) == []
