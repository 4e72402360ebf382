"""End to end on a terminal: `plan-build plan` / `architect` as a user runs them, with stub
agents on PATH, a loopback AgentMemory and real git. The stub `claude` records what it got."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gitcmd import git
from tests.support.memserver import MemoryServer
from tests.support.pty_run import PtyResult, run_on_pty
from tests.support.stubs import Stubs

REQUEST = ["Implement pagination for the audit log.  ", "--keep {{ api }} compatible ✔"]
TYPED_REQUEST = [("> ", REQUEST[0] + "\n"), ("> ", REQUEST[1] + "\n"), ("> ", "EOF\n")]


def plan_build(cwd: Path, *args: str, typed=(), env: dict[str, str] | None = None) -> PtyResult:
    full = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return run_on_pty([sys.executable, "-m", "plan_build", *args], cwd=cwd, env=full, typed=typed)


def launched(stubs: Stubs) -> list[dict]:
    return [
        c
        for c in stubs.calls("claude")
        if c["argv"][:1] != ["--version"] and c["argv"][:1] != ["plugin"]
    ]


def test_plan_launches_interactive_claude_with_the_rendered_prompt(
    ready: Path, stubs: Stubs
) -> None:
    r = plan_build(ready, "plan", typed=TYPED_REQUEST)
    assert r.code == 0, r.output
    assert "ready · standard · shop (main)" in r.output
    assert "Describe the work. End with a line containing only EOF." in r.output
    assert "launching Claude Code (standard workflow, memory required)" in r.output
    [call] = launched(stubs)
    assert call["argv"][0] == "--settings"
    settings = Path(call["argv"][1])
    assert call["argv"][2] == "--"
    prompt = call["argv"][3]
    assert len(call["argv"]) == 4
    # plan-build's settings layer: its own file under the repository's state folder, never
    # the user's or the project's .claude settings
    assert settings.parent == ready / ".git" / "plan-build" / "claude"
    layer = json.loads(settings.read_text())
    assert "Bash(git commit:*)" in layer["permissions"]["deny"]
    assert [g["matcher"] for g in layer["hooks"]["PreToolUse"]] == [
        "Bash",
        "Edit|Write|MultiEdit|NotebookEdit",
        "Bash|Edit|Write|MultiEdit|NotebookEdit",  # the checkpoint before every write
    ]
    assert "PostToolUse" not in layer["hooks"]  # live scope is architect mode's
    assert not (ready / ".claude").exists()
    assert "\n".join(REQUEST) + "\n" in prompt
    assert "github.com/ana/shop" in prompt
    assert "read the project's `workflow_status` slot" in prompt
    assert call["stdin_tty"] is True
    assert call["cwd"] == str(ready)
    env = call["env"]
    assert env["AGENTMEMORY_PROJECT_NAME"] == "github.com/ana/shop"
    assert env["AGENTMEMORY_INJECT_CONTEXT"] == "true"
    assert env["PLAN_BUILD_MEMORY_MODE"] == "required"
    assert " -I -S -c " in env["PLAN_BUILD_HOOK"]
    # the session baseline was taken just before launch and its id reaches Claude
    sid = env["PLAN_BUILD_SESSION"]
    assert f"plan-build session: `{sid}`" in prompt
    assert git(ready, "for-each-ref", "--format=%(refname)", "refs/plan-build/sessions/") == (
        f"refs/plan-build/sessions/{sid}\n"
    )


def test_yolo_reaches_claude_only_as_dangerously_skip_permissions(
    ready: Path, stubs: Stubs
) -> None:
    r = plan_build(ready, "plan", "--yolo", typed=TYPED_REQUEST, env={"IS_SANDBOX": "1"})
    assert r.code == 0, r.output
    [call] = launched(stubs)
    assert call["argv"][0] == "--settings"
    assert call["argv"][2:4] == ["--dangerously-skip-permissions", "--"]
    assert len(call["argv"]) == 5
    for c in stubs.calls("claude"):
        assert "-p" not in c["argv"]
        assert "--print" not in c["argv"]
        assert "--yolo" not in c["argv"]


def test_preflight_runs_before_the_request_is_read(ready: Path, stubs: Stubs) -> None:
    stubs.remove("codex")
    r = plan_build(ready, "plan", typed=TYPED_REQUEST)
    assert r.code == 3
    assert "codex is not on PATH" in r.output
    assert "Describe the work" not in r.output
    assert launched(stubs) == []


def test_degraded_mode_is_chosen_by_the_user_and_told_to_claude(
    ready: Path, stubs: Stubs, memory_server: MemoryServer
) -> None:
    memory_server.state.slots_enabled = False
    r = plan_build(ready, "plan", typed=[("[s]top", "d\n"), *TYPED_REQUEST])
    assert r.code == 0, r.output
    assert "memory slots are disabled" in r.output
    [call] = launched(stubs)
    assert call["env"]["AGENTMEMORY_INJECT_CONTEXT"] == "false"
    assert call["env"]["PLAN_BUILD_MEMORY_MODE"] == "degraded"
    assert "Memory is **unavailable**" in call["argv"][-1]
    assert "read the project's `workflow_status` slot" not in call["argv"][-1]
    # and the session's baseline keeps it, so `status` can tell whoever comes back, and why
    sid = call["env"]["PLAN_BUILD_SESSION"]
    meta = json.loads((ready / ".git/plan-build/sessions" / sid / "baseline.json").read_text())
    assert meta["memory_mode"] == "degraded"
    assert "memory slots are disabled" in meta["memory_reason"]


def test_stop_at_the_memory_question_launches_nothing(
    ready: Path, stubs: Stubs, memory_server: MemoryServer
) -> None:
    memory_server.state.health_status = 503
    r = plan_build(ready, "plan", typed=[("[s]top", "s\n")])
    assert r.code == 3
    assert launched(stubs) == []


def test_without_a_terminal_plan_stops_before_anything(cli, ready: Path, stubs: Stubs) -> None:
    r = cli("plan", cwd=ready, input="do it\nEOF\n")
    assert r.code == 3
    assert "stdin and stdout are not a terminal" in r.stderr
    assert launched(stubs) == []


def test_first_run_proposes_the_identity_then_stops_for_a_commit(
    repo: Path, stubs: Stubs, memory_server: MemoryServer, bundle: Path
) -> None:
    git(repo, "remote", "add", "origin", "https://github.com/ana/shop.git")
    r = plan_build(repo, "plan", typed=[("[n]o (default)", "y\n")])
    assert r.code == 5, r.output
    assert 'proposed id: "github.com/ana/shop"' in r.output
    assert (repo / ".agentmemory-project").read_text() == "github.com/ana/shop\n"
    assert (
        'git add .agentmemory-project && git commit -m "Add AgentMemory project identity" '
        "-- .agentmemory-project"
    ) in r.output
    assert launched(stubs) == []


def test_declining_the_identity_writes_nothing(
    repo: Path, stubs: Stubs, memory_server: MemoryServer, bundle: Path
) -> None:
    r = plan_build(repo, "plan", typed=[("[n]o (default)", "\n")])
    assert r.code == 4
    assert not (repo / ".agentmemory-project").exists()
    assert "plan-build identity --set" in r.output


def test_uncommitted_identity_change_is_refused(ready: Path, stubs: Stubs) -> None:
    (ready / ".agentmemory-project").write_text("github.com/ana/shop-new\n")
    r = plan_build(ready, "plan", typed=TYPED_REQUEST)
    assert r.code == 3
    assert ".agentmemory-project differs from HEAD" in r.output
    assert launched(stubs) == []


def test_empty_request_is_a_usage_error(ready: Path, stubs: Stubs) -> None:
    r = plan_build(ready, "plan", typed=[("> ", "   \n"), ("> ", "EOF\n")])
    assert r.code == 2
    assert "the request is empty" in r.output
    assert launched(stubs) == []


def test_architect_resume_and_new(ready: Path, stubs: Stubs) -> None:
    (ready / "SPEC.md").write_text("# old spec\n")
    (ready / "TASKS.md").write_text("# old tasks\n")
    r = plan_build(ready, "architect", typed=TYPED_REQUEST)
    assert r.code == 0, r.output
    assert "Start mode: **resume**" in launched(stubs)[-1]["argv"][-1]
    assert (ready / "SPEC.md").exists()

    r = plan_build(
        ready, "architect", "--new", "--yolo", typed=TYPED_REQUEST, env={"IS_SANDBOX": "1"}
    )
    assert r.code == 0, r.output
    prompt = launched(stubs)[-1]["argv"][-1]
    assert "Start mode: **archive-and-start-new**" in prompt
    assert launched(stubs)[-1]["argv"][2] == "--dangerously-skip-permissions"
    layer = json.loads(Path(launched(stubs)[-1]["argv"][1]).read_text())
    state = ready / ".git" / "plan-build"
    assert [g["hooks"][0]["command"] for g in layer["hooks"]["PostToolUse"]] == [
        f"eval \"$PLAN_BUILD_HOOK\" 'post-{what} --mode architect --state {state}' || exit 2"
        for what in ("edit", "bash")
    ]
    [archive] = list((ready / "docs" / "archive").iterdir())
    assert sorted(p.name for p in archive.iterdir()) == ["SPEC.md", "TASKS.md"]
    assert (archive / "SPEC.md").read_text() == "# old spec\n"
    assert not (ready / "SPEC.md").exists()
    assert f"(SPEC.md, TASKS.md) into `docs/archive/{archive.name}`" in prompt
    # the baseline predates the archive, so the move is part of the session's change
    status = subprocess.run(
        [sys.executable, "-m", "plan_build", "status", "--json"],
        cwd=ready,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "SPEC.md" in status
    assert f"docs/archive/{archive.name}/SPEC.md" in status


def test_a_failed_archive_aborts_the_launch_and_keeps_the_records(
    ready: Path, stubs: Stubs
) -> None:
    (ready / "SPEC.md").write_text("# spec\n")
    (ready / "docs").mkdir()
    (ready / "docs" / "archive").write_text("a file where the archive directory should be\n")
    r = plan_build(ready, "architect", "--new", typed=TYPED_REQUEST)
    assert r.code == 6, r.output
    assert "archiving the records" in r.output
    assert (ready / "SPEC.md").read_text() == "# spec\n"
    assert launched(stubs) == []


def test_dry_run_prints_everything_and_launches_nothing(cli, ready: Path, stubs: Stubs) -> None:
    r = cli(
        "plan",
        "--dry-run",
        "--yolo",
        cwd=ready,
        input="\n".join(REQUEST) + "\nEOF\n",
        env={"IS_SANDBOX": "1"},
    )
    assert r.code == 0, r.stderr
    assert "--- argv (cwd: " in r.stdout
    assert "AGENTMEMORY_PROJECT_NAME=github.com/ana/shop" in r.stdout
    assert r.stdout.count("\n".join(REQUEST)) == 1  # the prompt is printed once
    assert r.stdout.rstrip().endswith("would launch")
    assert launched(stubs) == []


def test_the_dry_run_argv_names_the_prompt_and_pasting_it_runs_the_same_launch(
    cli, ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    r = cli(
        "plan",
        "--dry-run",
        "--yolo",
        cwd=ready,
        input="\n".join(REQUEST) + "\nEOF\n",
        env={"IS_SANDBOX": "1"},
    )
    assert r.code == 0, r.stderr
    argv_line = r.stdout.split(") ---\n", 1)[1].split("\n", 1)[0]
    command, size = argv_line.split("  # ")
    settings = ready / ".git" / "plan-build" / "claude"
    assert command.startswith(f"claude --settings {settings}/settings-")
    assert command.endswith('.json --dangerously-skip-permissions -- "$PROMPT"')
    # the dry run prints the settings file the launch would write, byte for byte
    printed = r.stdout.split("--- settings: the launch writes ", 1)[1]
    path, body = printed.split(" with ---\n", 1)
    assert command.split()[2] == path
    layer = json.loads(body.rsplit("\nwould launch", 1)[0])
    assert layer["hooks"]["ConfigChange"][0]["matcher"] == (
        "user_settings|project_settings|local_settings"
    )
    assert not settings.exists()  # a dry run writes nothing
    snippet = r.stdout.split(" ---\n", 3)[3].split("--- end ---\n", 1)[0]
    script = tmp_path / "pasted.sh"
    script.write_text(snippet + command + "\n")
    subprocess.run(["bash", str(script)], cwd=ready, check=True, stdin=subprocess.DEVNULL)
    [call] = launched(stubs)
    assert call["argv"][2:4] == ["--dangerously-skip-permissions", "--"]
    prompt = call["argv"][4]
    assert size == f"{len(prompt.encode()):,} bytes, printed below"
    assert prompt.startswith("# plan-build session")
    assert prompt.endswith("\n")
    assert "\n".join(REQUEST) + "\n" in prompt


def test_dry_run_says_why_it_would_not_launch(
    cli, repo: Path, stubs: Stubs, memory_server: MemoryServer, bundle: Path
) -> None:
    stubs.remove("coderabbit")
    r = cli("architect", "--dry-run", "--new", cwd=repo, input="x\nEOF\n")
    assert r.code == 3
    assert "would not launch: preflight failed: tool.coderabbit" in r.stdout
    assert ".agentmemory-project is missing" in r.stdout
    assert not (repo / ".agentmemory-project").exists()
    assert not (repo / "docs").exists()
    assert git(repo, "for-each-ref", "refs/plan-build/") == ""  # no baseline in a dry run


def test_prompt_without_a_terminal_stops_before_auggie_runs(cli, ready: Path, stubs: Stubs) -> None:
    r = cli("plan", "--prompt", cwd=ready, input="x\nEOF\n")
    assert r.code == 3
    assert "terminal" in r.stderr
    assert [c for c in stubs.calls("auggie") if "--print" in c["argv"]] == []
    assert launched(stubs) == []


def test_a_request_too_large_for_one_argument_is_refused_before_launch(
    cli, ready: Path, stubs: Stubs
) -> None:
    r = cli("plan", "--dry-run", cwd=ready, input="x" * 140_000 + "\nEOF\n")
    assert r.code == 2
    assert "at most 128 KiB" in r.stderr
    assert launched(stubs) == []


def test_a_nul_byte_in_the_request_is_refused_before_anything_is_written(
    cli, ready: Path, stubs: Stubs
) -> None:
    dry = cli("plan", "--dry-run", cwd=ready, input="ok\nthen \x00 this\nEOF\n")
    assert dry.code == 2, dry.stderr
    assert "NUL byte on line 2" in dry.stderr
    before = git(ready, "for-each-ref")
    typed = [("> ", "ok\n"), ("> ", "bad \x00 here\n"), ("> ", "EOF\n")]
    r = plan_build(ready, "plan", typed=typed)
    assert r.code == 2, r.output
    assert "NUL byte on line 2" in r.output
    assert "Traceback" not in r.output
    assert launched(stubs) == []
    assert git(ready, "for-each-ref") == before  # no session ref
    assert not (ready / ".git" / "plan-build" / "sessions").exists()  # no baseline written


@pytest.mark.parametrize(
    "prompt",
    [
        "# plan-build session\nPLAN_BUILD_PROMPT\n--- end ---\n",
        "no newline at the end",
        "two newlines\n\n",
        "quotes ' \" $HOME `date` \\ and ✔\n",
    ],
)
def test_the_dry_run_prompt_snippet_gives_bash_exactly_the_prompt(prompt: str) -> None:
    from plan_build.startup import launch

    plan = launch.Launch(launch.claude_argv(prompt, yolo=False), {}, prompt, Path("/repo"))
    text = launch.dry_run_text(plan)
    assert text.count(prompt) == 1
    snippet = text.split(" ---\n", 3)[3].rsplit("--- end ---\n", 1)[0]
    got = subprocess.run(
        ["bash", "-c", snippet + 'printf %s "$PROMPT"'], capture_output=True, check=True
    ).stdout
    assert got == prompt.encode()
    assert f'claude -- "$PROMPT"  # {len(prompt.encode()):,} bytes, printed below' in text


def test_the_degraded_reason_the_baseline_keeps_holds_no_credential() -> None:
    """The reason is shown by `status` and the report and kept in baseline.json: a check's
    detail that carries a token (an error echoing a URL, a header) is withheld, the rest kept."""
    from plan_build.core.checks import Check
    from plan_build.startup.chain import degraded_reason
    from plan_build.startup.preflight import Report

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    secret = "s3cr3t-value-0123456789"
    checks = [
        Check("memory.server", "fail", f"refused: Authorization: token {token}", degradable=True),
        Check("memory.slots", "fail", f"slots off (secret {secret})", degradable=True),
        Check("memory.health", "fail", "no AgentMemory server answers", degradable=True),
        Check("git.worktree", "pass", "a git work tree"),
    ]
    report = Report("standard", checks, None, memory_mode="degraded")
    reason = degraded_reason(report, {"AGENTMEMORY_SECRET": secret}) or ""
    assert token not in reason
    assert secret not in reason
    assert reason.count("looks like a credential") == 2
    assert reason.endswith("memory.health: no AgentMemory server answers")
    assert degraded_reason(Report("standard", checks, None), {}) is None


def test_a_settings_file_that_switches_hooks_off_stops_the_launch_before_the_request(
    cli, ready: Path, stubs: Stubs
) -> None:
    (ready / ".claude").mkdir()
    local = ready / ".claude" / "settings.local.json"
    local.write_text('{"disableAllHooks": true}\n')
    dry = cli("plan", "--dry-run", cwd=ready, input="x\nEOF\n")
    assert dry.code == 3
    assert "would not launch: Claude Code's hooks are switched off (disableAllHooks)" in dry.stdout
    r = plan_build(ready, "plan", typed=[])
    assert r.code == 3, r.output
    assert f"switched off (disableAllHooks) in {local}" in r.output
    assert "Describe the work" not in r.output  # refused before the request is asked for
    assert launched(stubs) == []
    assert local.read_text() == '{"disableAllHooks": true}\n'  # the user's file, untouched
