"""Approval gates and session resolution from inside the real interactive Claude Code.

Claude's bash mode (a typed `!cmd` line) runs a shell command as Claude's child without a
model call: exactly where an agent's Bash tool runs its commands. From there plan-build must
refuse to commit or to approve a deferral even when the command fakes a terminal with
`script` and unsets CLAUDECODE, and must tell the reader to ask the user. After `/clear` the
same Claude process (new session id) must still find the workflow it owned.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from tests.contract.conftest import Agents, Plugins
from tests.contract.fakeapis import ModelsApi, ResponsesApi
from tests.contract.test_launch_contract import EXIT, START, TURN, Rig, read_json
from tests.contract.tmux import Tmux
from tests.support.gitcmd import git
from tests.support.reviewkit import CLEAN, PLAN_REVIEW, only_workflow
from tests.support.runcli import run_cli

pytestmark = pytest.mark.contract

PB = shlex.join([sys.executable, "-m", "plan_build"])


@pytest.fixture
def rig(tmux: Tmux, ready: Path, agents: Agents, plugins: Plugins, models_api: ModelsApi) -> Rig:
    return Rig(run_cli, tmux, ready, agents, models_api)


def bang(rig: Rig, line: str, out: Path, marker: str) -> None:
    """Type `!<line>` into Claude's prompt and wait for it to write `out/marker`. Enter is
    pressed again while the line still waits in the prompt (a busy TUI can miss the first)."""
    rig.tmux.type("!", enter=False)
    time.sleep(0.5)
    rig.tmux.type(f"{line}; echo done > {out}/{marker}", enter=False)
    time.sleep(0.5)
    done = out / marker
    deadline = time.monotonic() + TURN
    while not done.exists() and time.monotonic() < deadline:
        rig.tmux.press("Enter")  # on an empty prompt a second Enter does nothing
        waited = time.monotonic() + 8
        while not done.exists() and time.monotonic() < waited:
            time.sleep(0.2)
    rig.tmux.wait(f"the `!` line writing {marker}", done.exists, 0)


def faked(cmd: str, *, unset: bool) -> str:
    env = "env -u CLAUDECODE " if unset else ""
    return f"printf 'y\\n' | {env}script -qec {shlex.quote(cmd)} /dev/null"


def start_claude(rig: Rig) -> tuple[int, Path]:
    pid = rig.tmux.start(["claude"], cwd=rig.repo, env=rig.env())
    session_file = rig.agents.claude_dir / "sessions" / f"{pid}.json"
    rig.tmux.wait(f"{session_file}", lambda: read_json(session_file), START)
    rig.tmux.wait_text("❯", START)
    return pid, session_file


def test_inside_the_real_claude_no_gate_takes_an_agents_yes(
    rig: Rig, codex_api: ResponsesApi, tmp_path: Path
) -> None:
    repo = rig.repo
    (repo.parent / "plan.md").write_text("# Add pagination\n\n1. Add `limit`.\n")
    assert rig.cli("baseline", cwd=repo).code == 0
    (repo / "app.py").write_text("def page(limit):\n    return limit\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    codex_api.reply = PLAN_REVIEW
    out = tmp_path / "inside"
    out.mkdir()
    start_claude(rig)

    bang(
        rig,
        f"{PB} verify > {out}/verify.txt 2>&1; "
        f"{faked(f'{PB} commit --message agent', unset=True)} > {out}/faked-commit.txt 2>&1; "
        f"{PB} commit --message agent > {out}/commit.txt 2>&1; "
        f"{PB} review.plan --plan ../plan.md > {out}/plan.txt 2>&1",
        out,
        "one",
    )
    wf = only_workflow(repo)
    (wf / "artifacts" / "plan-findings-r1.md").write_text(
        "### HIGH-1\nDecision: ACCEPT\n### LOW-1\nDecision: DEFER\n"
    )
    bang(
        rig,
        f"{faked(f'{PB} review.approve', unset=False)} > {out}/approve.txt 2>&1; "
        f"{faked(f'{PB} review.approve', unset=True)} > {out}/approve-unset.txt 2>&1",
        out,
        "two",
    )
    rig.tmux.command("/exit", EXIT)

    # 1. no commit, although the command had a terminal and no CLAUDECODE
    assert git(repo, "rev-parse", "HEAD").strip() == head
    faked_commit = (out / "faked-commit.txt").read_text()
    assert "the commit needs the user's own approval" in faked_commit, faked_commit
    assert "(claude) is Claude Code" in faked_commit
    # 3. the refusal tells the agent (or a `!` line's user) to ask for a real terminal
    plain = (out / "commit.txt").read_text()
    assert "(CLAUDECODE is set)" in plain, plain
    assert 'ask the user to run `plan-build commit --message "…"` in a terminal outside' in plain
    assert "a `!` line in Claude does not count" in plain
    assert (
        "verified · next: ask the user to run plan-build commit" in (out / "verify.txt").read_text()
    )
    # 2. no approval of the deferred LOW, with or without CLAUDECODE
    for name in ("approve.txt", "approve-unset.txt"):
        text = (out / name).read_text()
        assert "approving plan round 1 with these needs the user's own approval" in text, text
        assert f"ask the user to run `plan-build review.approve --workflow {wf.name}`" in text
    assert json.loads((wf / "workflow.json").read_text())["phase"] == "plan"
    assert not (wf / "artifacts" / "plan-approval-r1.json").exists()


def test_after_clear_the_same_claude_still_finds_its_workflow(
    rig: Rig, codex_api: ResponsesApi, tmp_path: Path
) -> None:
    (rig.repo.parent / "plan.md").write_text("# Add pagination\n\n1. Add `limit`.\n")
    codex_api.reply = CLEAN
    out = tmp_path / "inside"
    out.mkdir()
    pid, session_file = start_claude(rig)
    before = read_json(session_file)

    bang(rig, f"{PB} review.plan --plan ../plan.md > {out}/plan.txt 2>&1", out, "one")
    wf = only_workflow(rig.repo)
    assert (
        json.loads((wf / "workflow.json").read_text())["owner_session_id"] == (before["sessionId"])
    ), (out / "plan.txt").read_text()

    rig.tmux.type("/clear", enter=False)
    rig.tmux.wait_text("/clear", 10)

    def cleared() -> dict[str, object] | None:
        rig.tmux.press("Enter")
        time.sleep(0.5)
        now = read_json(session_file)
        return now if now and now.get("sessionId") != before["sessionId"] else None

    after = rig.tmux.wait("a new session id after /clear", cleared, TURN)
    rig.tmux.wait_text("❯", START)
    bang(
        rig,
        f"echo $CLAUDE_CODE_SESSION_ID > {out}/id; "
        f"{PB} review.status --json > {out}/status.json 2> {out}/status.err",
        out,
        "two",
    )
    rig.tmux.command("/exit", EXIT)

    # what claude 2.1.332 does on /clear: same process, new id in the file and the variable
    assert after["pid"] == pid
    assert after["procStart"] == before["procStart"]
    assert (out / "id").read_text().strip() == after["sessionId"]
    status = json.loads((out / "status.json").read_text())
    err = (out / "status.err").read_text()
    assert status["workflow"] == wf.name, err
    assert "the Claude session was cleared (/clear)" in err
    assert (
        json.loads((wf / "workflow.json").read_text())["owner_session_id"] == (after["sessionId"])
    )
