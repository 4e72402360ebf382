"""The readiness report: every check shown, memory failures degradable only on request."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.startup import preflight, preflighttable, wslchecks
from tests.support.gitcmd import git
from tests.support.memserver import MemoryServer
from tests.support.sessions import make_session
from tests.support.stubs import Stubs

ALL_IDS = [
    "terminal",
    "git.worktree",
    "tool.git",
    "tool.claude",
    "tool.codex",
    "tool.coderabbit",
    "claude.safe_mode",
    "skill.readable",
    "sandbox.layer",
    "claude.plugin.mattpocock-skills",
    "claude.plugin.agentmemory",
    "codex.plugin.agentmemory",
    "memory.server",
]


def run(cwd: Path, **opts):
    session, _, err = make_session(
        cwd, answers=opts.pop("answers", None), tty=opts.pop("tty", True)
    )
    report = preflight.run(session, preflight.Options(**opts))
    return session, report, err


def test_everything_ready_lists_every_check_in_order(ready: Path) -> None:
    _, report, _ = run(ready)
    wsl = ["wsl.drive", "wsl.exe"] if wslchecks.is_wsl(os.environ) else []  # only on WSL
    ids = ALL_IDS[:6] + wsl + ALL_IDS[6:]
    assert [c.id for c in report.checks] == ids
    assert report.ok, [c for c in report.checks if c.status != "pass"]
    assert all(c.status == "pass" for c in report.checks)


def test_architect_mode_does_not_need_matt_skills(ready: Path) -> None:
    _, report, _ = run(ready, mode="architect")
    ids = [c.id for c in report.checks]
    assert "claude.plugin.mattpocock-skills" not in ids
    assert "claude.plugin.agentmemory" in ids
    assert next(c for c in report.checks if c.id == "skill.readable").detail.endswith(
        "ARCHITECT.md"
    )


def test_preflight_json_matches_the_documented_shape(cli, ready: Path) -> None:
    r = cli("preflight", "--json", cwd=ready)
    data = json.loads(r.stdout)
    assert set(data) == {"ok", "mode", "memory_mode", "checks"}
    assert (data["mode"], data["memory_mode"]) == ("standard", "required")
    # not a terminal: reported, but the report alone only warns about it
    terminal = data["checks"][0]
    assert (terminal["id"], terminal["status"]) == ("terminal", "warn")
    assert data["ok"] is True
    assert r.code == 0
    for row in data["checks"]:
        assert set(row) == {"id", "status", "degradable", "detail", "remediation", "seconds"}


def test_every_failure_is_reported_not_just_the_first(
    cli, ready: Path, stubs: Stubs, memory_server: MemoryServer
) -> None:
    stubs.remove("coderabbit")
    stubs.rule("claude", {"match": ["plugin", "list", "--json"], "stdout": "[]"})
    memory_server.state.slots_enabled = False
    r = cli("preflight", cwd=ready, env={"CLAUDE_CODE_SAFE_MODE": "1", "NO_COLOR": "1"})
    assert r.code == 3
    assert "FAIL coderabbit        coderabbit is not on PATH" in r.stderr
    assert "CLAUDE_CODE_SAFE_MODE=1 turns off Claude Code's plugins and skills" in r.stderr
    assert "-> unset CLAUDE_CODE_SAFE_MODE" in r.stderr
    assert "mattpocock-skills@mattpocock is not installed" in r.stderr
    assert "memory slots are disabled" in r.stderr
    assert "ok   git work tree" in r.stderr


def test_the_tools_are_one_row_and_each_missing_tool_has_its_own_fail_row(
    cli, ready: Path, stubs: Stubs
) -> None:
    stubs.remove("codex")
    stubs.remove("coderabbit")
    r = cli("preflight", cwd=ready, env={"NO_COLOR": "1"})
    lines = r.stderr.splitlines()
    assert [line for line in lines if line.split()[1:2] == ["tools"]] == [
        "  ok   tools             git " + git_version() + ", claude 2.1.332"
    ]
    assert "  FAIL codex             codex is not on PATH" in lines
    assert "  FAIL coderabbit        coderabbit is not on PATH" in lines
    assert "                         -> npm install -g @openai/codex@0.171.0" in lines
    data = json.loads(cli("preflight", "--json", cwd=ready).stdout)  # the JSON keeps every id
    tools = {c["id"]: c["status"] for c in data["checks"] if c["id"].startswith("tool.")}
    assert tools == {
        "tool.git": "pass",
        "tool.claude": "pass",
        "tool.codex": "fail",
        "tool.coderabbit": "fail",
    }


def test_all_tools_found_is_one_row(cli, ready: Path) -> None:
    r = cli("preflight", cwd=ready, env={"NO_COLOR": "1"})
    assert [line for line in r.stderr.splitlines() if line.split()[1:2] == ["tools"]] == [
        f"  ok   tools             git {git_version()}, claude 2.1.332, codex 0.171.0, "
        "coderabbit 0.3.4"
    ]


def git_version() -> str:
    import re
    import subprocess

    out = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\d+(?:\.\d+)+", out)
    assert found
    return found.group(0)


def test_missing_or_empty_skill_fails(ready: Path, bundle: Path) -> None:
    (bundle / "SKILL.md").write_text("  \n")
    _, report, _ = run(ready)
    skill = next(c for c in report.checks if c.id == "skill.readable")
    assert (skill.status, skill.detail) == ("fail", f"{bundle / 'SKILL.md'} is empty")
    (bundle / "SKILL.md").unlink()
    _, report, _ = run(ready)
    assert "cannot be read" in next(c for c in report.checks if c.id == "skill.readable").detail


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ("bare", "is a bare repository"),
        ("dotgit", "inside the .git directory"),
        ("none", "is not inside a git repository"),
    ],
)
def test_not_a_work_tree(
    tmp_path: Path, setup: str, words: str, stubs: Stubs, bundle: Path
) -> None:
    if setup == "bare":
        cwd = tmp_path / "bare.git"
        git(tmp_path, "init", "-q", "--bare", str(cwd))
    elif setup == "dotgit":
        git(tmp_path, "init", "-q", "r")
        cwd = tmp_path / "r" / ".git"
    else:
        cwd = tmp_path / "plain"
        cwd.mkdir()
    _, report, _ = run(cwd)
    check = next(c for c in report.checks if c.id == "git.worktree")
    assert check.status == "fail"
    assert words in check.detail


def test_unmerged_paths_block(ready: Path) -> None:
    git(ready, "checkout", "-q", "-b", "other")
    (ready / "README.md").write_text("other\n")
    git(ready, "commit", "-q", "-am", "other")
    git(ready, "checkout", "-q", "main")
    (ready / "README.md").write_text("main\n")
    git(ready, "commit", "-q", "-am", "main")
    import subprocess

    subprocess.run(["git", "merge", "other"], cwd=ready, capture_output=True, check=False)
    _, report, _ = run(ready)
    check = next(c for c in report.checks if c.id == "git.worktree")
    assert (check.status, check.detail) == ("fail", "unmerged paths: README.md")


def test_yolo_as_root_needs_is_sandbox(ready: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    _, report, _ = run(ready, yolo=True)
    check = report.checks[-1]
    assert (check.id, check.status) == ("yolo.root", "fail")
    assert "IS_SANDBOX=1" in (check.remediation or "")
    monkeypatch.setenv("IS_SANDBOX", "1")
    _, report, _ = run(ready, yolo=True)
    assert report.checks[-1].status == "pass"


def memory_down(memory_server: MemoryServer) -> None:
    memory_server.state.health_status = 503
    memory_server.state.health_body = {"status": "critical"}


def test_memory_failure_without_a_terminal_stops_with_exit_3(
    ready: Path, memory_server: MemoryServer
) -> None:
    memory_down(memory_server)
    session, report, _ = run(ready, tty=False, need_terminal=False)
    with pytest.raises(PlanBuildError) as err:
        preflight.settle(report, session, preflight.Options(need_terminal=False))
    assert err.value.code == ExitCode.PREFLIGHT
    assert "no terminal to approve degraded mode" in err.value.what


def test_memory_failure_continue_degraded(ready: Path, memory_server: MemoryServer) -> None:
    memory_down(memory_server)
    session, report, err = run(ready, answers=["d"])
    settled = preflight.settle(report, session, preflight.Options())
    assert settled.memory_mode == "degraded"
    assert settled.ok
    assert "no memory recall this session" in err.getvalue()
    assert session.ui.asked == ["Memory continuity is unavailable."]  # type: ignore[attr-defined]


def test_memory_failure_retry_reruns_only_memory_checks(
    ready: Path, stubs: Stubs, memory_server: MemoryServer
) -> None:
    memory_down(memory_server)
    session, report, _ = run(ready, answers=["r"])
    versions_before = len([c for c in stubs.calls() if c["argv"] == ["--version"]])
    memory_server.state.health_status = 200
    memory_server.state.health_body = {"status": "healthy", "version": "0.9.29"}
    settled = preflight.settle(report, session, preflight.Options())
    assert settled.memory_mode == "required"
    assert settled.ok
    assert len([c for c in stubs.calls() if c["argv"] == ["--version"]]) == versions_before


def test_memory_failure_stop(ready: Path, memory_server: MemoryServer) -> None:
    memory_down(memory_server)
    session, report, _ = run(ready, answers=["s"])
    with pytest.raises(PlanBuildError) as err:
        preflight.settle(report, session, preflight.Options())
    assert err.value.code == ExitCode.PREFLIGHT
    assert err.value.what == "stopped: memory continuity is unavailable"


def test_other_failures_never_offer_degraded_mode(
    ready: Path, stubs: Stubs, memory_server: MemoryServer
) -> None:
    memory_down(memory_server)
    stubs.remove("codex")
    session, report, _ = run(ready, answers=["d"])
    with pytest.raises(PlanBuildError) as err:
        preflight.settle(report, session, preflight.Options())
    assert err.value.code == ExitCode.PREFLIGHT
    assert "tool.codex" in err.value.what
    assert session.ui.asked == []  # type: ignore[attr-defined]


def test_the_branch_is_asked_once_beside_the_probes(
    ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header and the one-line ready summary name the branch; git is asked once, while the
    other probes run (issue 15: no git launch after the slowest probe has finished)."""
    import threading

    from plan_build.core.gitrepo import Repo

    asked: list[bool] = []  # True: asked in a probe's thread
    real = Repo.branch

    def branch(self: Repo) -> str | None:
        asked.append(threading.current_thread() is not threading.main_thread())
        return real(self)

    monkeypatch.setattr(Repo, "branch", branch)
    session, report, _ = run(ready)
    assert report.header.endswith("(main)")
    assert preflighttable.render_ready(report, session).endswith(f"{ready.name} (main)")
    assert asked == [True]


def test_a_weaker_hold_on_the_process_tree_is_named(
    ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On macOS (or with /proc hidden) preflight says what a user loses; on Linux no row."""
    from plan_build.core import proctree

    monkeypatch.setattr(proctree, "supervision_gap", lambda: "this system has no child subreaper")
    _, report, _ = run(ready)
    row = report.checks[-1]
    assert (row.id, row.status) == ("process.tree", "warn")
    assert "can outlive a killed plan-build" in row.detail
    assert report.ok  # a warning, not a refusal


def test_the_closing_line_counts_every_failure_the_table_shows() -> None:
    from plan_build.core.checks import Check

    hard = [Check("tool.codex", "fail", "missing"), Check("tool.claude", "fail", "missing")]
    soft = [
        Check(f"memory.{n}", "fail", "down", degradable=True) for n in ("server", "cli", "hook")
    ]
    err = preflight.blocked(hard, degradable=soft)
    assert err.what.startswith("preflight failed: 5 checks (tool.codex, tool.claude, memory.")
    assert err.what.endswith("; 2 of them cannot be run around in degraded mode")
    assert err.code == ExitCode.PREFLIGHT
    alone = preflight.blocked(hard[:1])
    assert alone.what == "preflight failed: 1 check (tool.codex)"
