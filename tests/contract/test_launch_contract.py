"""`plan-build plan` / `architect` handing a real terminal (a private tmux server) to the real
Claude Code, offline: Claude's first-run screens are pre-answered in the scratch config dir and
its API is a loopback server that ends every turn with HTTP 400.

What Claude itself records proves the launch: its transcript holds plan-build's rendered prompt
as the first user message, `sessions/<pid>.json` names the very process plan-build became
(exec, no wrapper), and `--yolo` sessions run in bypassPermissions mode. Each session is ended
the way a user ends it, with /exit.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.contract.conftest import DUMMY_KEY, Agents, Plugins, seed_offline_start
from tests.contract.fakeapis import ModelsApi, ResponsesApi
from tests.contract.tmux import Tmux
from tests.support.runcli import run_cli

pytestmark = pytest.mark.contract

# typed at plan-build's request prompt: trailing spaces, a flag-like line, template syntax,
# shell metacharacters and non-ASCII must all reach Claude unchanged
REQUEST = [
    "Implement pagination for the audit log.  ",
    "--keep {{ api }} compatible ✔ $HOME `date` 'quoted' \"double\"",
]
START = 60.0  # seconds for plan-build's preflight plus Claude's start
TURN = 60.0
EXIT = 30.0


def mangled(path: Path) -> str:
    """Claude's project directory name for a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def dry_run_argv(cli: Any, cwd: Path, args: list[str], env: dict[str, str]) -> list[str]:
    """The exact argv plan-build would exec, from `--dry-run` with the same request."""
    r = cli(*args, "--dry-run", cwd=cwd, input="\n".join(REQUEST) + "\nEOF\n", env=env)
    assert r.code == 0, r.stderr
    quoted = r.stdout.split(") ---\n", 1)[1].split("  # ", 1)[0]
    # the prompt is printed once, as a bash snippet setting $PROMPT: paste it as a user would
    snippet = r.stdout.split(" ---\n", 3)[3].split("--- end ---\n", 1)[0]
    prompt = subprocess.run(
        ["bash", "-c", snippet + 'printf %s "$PROMPT"'], capture_output=True, check=True
    ).stdout.decode("utf-8")
    words = shlex.split(quoted.replace('"$PROMPT"', "@PROMPT@"))
    return [prompt if word == "@PROMPT@" else word for word in words]


def assert_same_text(got: str, expected: str) -> None:
    """Equal texts, or a failure that shows the lines that differ."""
    if got != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True), got.splitlines(keepends=True), "expected", "got"
        )
        raise AssertionError("texts differ:\n" + "".join(diff))


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def first_user_entry(transcript: Path) -> dict[str, Any] | None:
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            return None  # still being written
        if entry.get("type") == "user":
            return dict(entry)
    return None


@dataclass
class Launched:
    argv: list[str]
    pid: int
    session: dict[str, Any]
    transcript: Path
    first_user: dict[str, Any]
    environ: dict[str, str]
    cmdline: list[str]
    screen: str
    exit_screen: str
    exit_status: int | None


@dataclass
class Rig:
    """A ready repository, the real CLIs with plugins installed, the loopback model API and a
    private tmux server."""

    cli: Any
    tmux: Tmux
    repo: Path
    agents: Agents
    api: ModelsApi

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        seed_offline_start(self.agents.claude_dir, self.repo.resolve(), DUMMY_KEY)
        return {
            **os.environ,
            "ANTHROPIC_API_KEY": DUMMY_KEY,
            "ANTHROPIC_BASE_URL": self.api.origin,
            "NO_COLOR": "1",
            **(extra or {}),
        }


@pytest.fixture
def rig(tmux: Tmux, ready: Path, agents: Agents, plugins: Plugins, models_api: ModelsApi) -> Rig:
    return Rig(run_cli, tmux, ready, agents, models_api)


def launch_and_exit(rig: Rig, args: list[str], extra_env: dict[str, str] | None = None) -> Launched:
    """Run `plan-build <args>` on the terminal, type the request, let Claude take the first
    turn, read what Claude recorded, then /exit."""
    tmux, agents = rig.tmux, rig.agents
    env = rig.env(extra_env)
    argv = dry_run_argv(rig.cli, rig.repo, args, env)

    pid = tmux.start([sys.executable, "-m", "plan_build", *args], cwd=rig.repo, env=env)
    tmux.wait_text("End with a line containing only EOF", START)
    for line in REQUEST:
        tmux.type(line)
    tmux.type("EOF")

    session_file = agents.claude_dir / "sessions" / f"{pid}.json"
    session = tmux.wait(f"{session_file}", lambda: read_json(session_file), START)
    environ = dict(
        item.split("=", 1)
        for item in Path(f"/proc/{pid}/environ").read_text("utf-8", "replace").split("\0")
        if "=" in item
    )
    cmdline = Path(f"/proc/{pid}/cmdline").read_text("utf-8", "replace").split("\0")[:-1]
    transcript = (
        agents.claude_dir / "projects" / mangled(rig.repo) / f"{session['sessionId']}.jsonl"
    )
    first_user = tmux.wait(
        f"the first user message in {transcript}", lambda: first_user_entry(transcript), TURN
    )
    screen = tmux.wait_text("API Error: 400", TURN)  # the turn is over: Claude waits for input

    tmux.command("/exit", EXIT)
    return Launched(
        argv,
        pid,
        session,
        transcript,
        first_user,
        environ,
        cmdline,
        screen,
        tmux.screen(),
        tmux.exit_status(),
    )


def assert_clean_exit(run: Launched, agents: Agents) -> None:
    assert run.exit_status == 0, run.exit_screen
    assert f"--resume {run.session['sessionId']}" in run.exit_screen
    assert not (agents.claude_dir / "sessions" / f"{run.pid}.json").exists()


def launched_prompt(run: Launched) -> str:
    """The prompt plan-build exec'd Claude with, checked against its own dry run: the same
    argv, except that only a real launch has a plan-build session id (the baseline it takes,
    also exported as PLAN_BUILD_SESSION), which the dry run leaves out, and a broker, whose
    request folder its sandbox may write: the settings file, named for its content, differs."""
    prompt = run.cmdline[-1]
    session_line = f"- plan-build session: `{run.environ['PLAN_BUILD_SESSION']}` ("
    [line] = [ln for ln in prompt.splitlines(keepends=True) if ln.startswith(session_line)]
    settings = run.argv.index("--settings") + 1
    assert run.cmdline[:settings] + run.cmdline[settings + 1 : -1] == (
        run.argv[:settings] + run.argv[settings + 1 : -1]
    )
    launched = json.loads(Path(run.cmdline[settings]).read_text())
    [spool] = launched["sandbox"]["filesystem"]["allowWrite"]
    assert "/plan-build/run/broker-" in spool
    assert_same_text(prompt.replace(line, "", 1), run.argv[-1])
    return prompt


def test_plan_hands_its_rendered_prompt_to_an_interactive_claude(rig: Rig) -> None:
    run = launch_and_exit(rig, ["plan"])
    assert run.cmdline[0] == "claude"
    assert run.cmdline[1] == "--settings"  # plan-build's settings layer (claudelayer)
    assert run.cmdline[3] == "--"
    assert len(run.cmdline) == 5
    prompt = launched_prompt(run)
    assert "\n".join(REQUEST) + "\n" in prompt
    # Claude's own record of the session: the first user turn is exactly that prompt
    assert run.first_user["message"]["role"] == "user"
    assert_same_text(run.first_user["message"]["content"], prompt)
    assert run.first_user["entrypoint"] == "cli"
    assert run.first_user["permissionMode"] != "bypassPermissions"
    assert run.session["pid"] == run.pid  # plan-build exec'd: the pane's process is Claude
    assert run.session["kind"] == "interactive"
    assert run.session["entrypoint"] == "cli"
    assert run.session["version"] == "2.1.332"
    assert Path(run.session["cwd"]).resolve() == rig.repo.resolve()
    assert prompt in rig.api.user_texts()
    assert "bypass permissions on" not in run.screen
    assert run.environ["AGENTMEMORY_PROJECT_NAME"] == "github.com/ana/shop"
    assert run.environ["PLAN_BUILD_MEMORY_MODE"] == "required"
    assert_clean_exit(run, rig.agents)


def test_architect_yolo_runs_claude_with_bypass_permissions(rig: Rig) -> None:
    (rig.repo / "SPEC.md").write_text("# old spec\n")
    run = launch_and_exit(
        rig,
        ["architect", "--yolo"],
        # root: Claude refuses --dangerously-skip-permissions unless IS_SANDBOX=1
        extra_env={"IS_SANDBOX": "1"},
    )
    prompt = launched_prompt(run)
    assert "Start mode: **resume**" in prompt
    assert_same_text(run.first_user["message"]["content"], prompt)
    assert run.first_user["permissionMode"] == "bypassPermissions"
    assert "bypass permissions on" in run.screen
    assert run.session["pid"] == run.pid
    assert run.session["entrypoint"] == "cli"
    assert run.cmdline == [
        "claude",
        "--settings",
        run.cmdline[2],
        "--dangerously-skip-permissions",
        "--",
        prompt,
    ]
    assert_clean_exit(run, rig.agents)


def test_safe_mode_is_the_variable_claude_reads_and_plan_build_refuses_it(rig: Rig) -> None:
    env = rig.env({"CLAUDE_CODE_SAFE_MODE": "1"})
    rig.tmux.start(["claude"], cwd=rig.repo, env=env)
    screen = rig.tmux.wait_text("CLAUDE_CODE_SAFE_MODE", START)
    assert "Safe mode" in screen
    rig.tmux.command("/exit", EXIT)
    assert rig.tmux.exit_status() == 0

    r = rig.cli("plan", "--dry-run", cwd=rig.repo, input="x\nEOF\n", env=env)
    assert r.code == 3
    assert "would not launch: preflight failed: claude.safe_mode" in r.stdout
    assert "unset CLAUDE_CODE_SAFE_MODE" in r.stderr


def test_review_commands_run_inside_the_real_claude_resolve_its_session(
    rig: Rig, codex_api: ResponsesApi, tmp_path: Path
) -> None:
    """What a user does inside Claude Code: `!plan-build review.plan …` (Claude's bash mode
    runs it as Claude's child). plan-build finds the session by walking its ancestors (and by
    the CLAUDE_CODE_SESSION_ID Claude exports), and the workflow is owned by that session."""
    (rig.repo.parent / "plan.md").write_text("# Add pagination\n\n1. Add `limit`.\n")
    codex_api.reply = (
        "## Findings\nNo findings.\n\n## Summary\nCritical: 0\nHigh: 0\nMedium: 0\nLow: 0\n"
    )
    out = tmp_path / "inside"
    out.mkdir()
    pb = shlex.join([sys.executable, "-m", "plan_build"])
    pid = rig.tmux.start(["claude"], cwd=rig.repo, env=rig.env())
    session_file = rig.agents.claude_dir / "sessions" / f"{pid}.json"
    session = rig.tmux.wait(f"{session_file}", lambda: read_json(session_file), START)
    rig.tmux.wait_text("❯", START)

    rig.tmux.type("!", enter=False)
    time.sleep(0.5)
    rig.tmux.type(
        # the doctor without Claude's hints: the process-tree walk alone must find the session
        "env -u CLAUDE_CODE_SESSION_ID -u CLAUDE_PID "
        f"{pb} review.doctor --json > {out}/doctor.json; "
        f"{pb} review.plan --plan ../plan.md > {out}/plan.txt 2>&1; "
        f"{pb} review.status --json > {out}/status.json; echo done > {out}/done"
    )
    rig.tmux.wait("the commands to finish", (out / "done").exists, TURN)
    rig.tmux.command("/exit", EXIT)

    doctor = {c["id"]: c for c in json.loads((out / "doctor.json").read_text())["checks"]}
    assert doctor["claude.session"]["status"] == "pass"
    assert doctor["claude.session"]["detail"] == (
        f"{session['sessionId']} (pid {pid}, via process tree)"
    )
    status = json.loads((out / "status.json").read_text())
    assert status["owner_session"] == session["sessionId"], (out / "plan.txt").read_text()
    assert Path(status["owner_cwd"]).resolve() == rig.repo.resolve()
    assert len(codex_api.turns()) == 1  # the round ran through the real codex exec
