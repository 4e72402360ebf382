"""After `/clear` Claude Code keeps its process (pid and start time) but switches its session
file to a new id. The workflow that process owned is still found, with a note, and rebound to
the new id; a match that is any less certain stays an ended session's workflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.reviewkit import CLEAN, OTHER_SESSION, SESSION_ID, claude_session, codex_rule


@pytest.fixture
def owned(repo: Path, private_home: Path, stubs, cli) -> Path:
    """A workflow created by this test process posing as Claude session SESSION_ID."""
    (repo.parent / "plan.md").write_text("# Plan\n")
    claude_session(private_home, repo)
    stubs.rule("codex", codex_rule(CLEAN))
    r = cli("review.plan", "--plan", "../plan.md", cwd=repo)
    assert r.code == 0, r.stderr
    [wf] = (repo / ".claude" / "codex-review" / "workflows").iterdir()
    return wf


def clear(private_home: Path, repo: Path) -> None:
    """What /clear does to the session file: same pid and procStart, a new sessionId."""
    claude_session(private_home, repo, sid=OTHER_SESSION)


def test_the_cleared_sessions_workflow_is_found_and_rebound(
    repo: Path, private_home: Path, owned: Path, cli
) -> None:
    clear(private_home, repo)

    r = cli("review.status", "--json", cwd=repo)

    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["workflow"] == owned.name
    assert (
        f"note: the Claude session was cleared (/clear): workflow {owned.name} of session "
        f"{SESSION_ID} continues in {OTHER_SESSION}"
    ) in r.stderr
    assert json.loads((owned / "workflow.json").read_text())["owner_session_id"] == OTHER_SESSION
    again = cli("review.status", "--json", cwd=repo)
    assert json.loads(again.stdout)["workflow"] == owned.name
    assert "cleared" not in again.stderr  # rebound: found as the session's own from now on


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda note: {**note, "proc_start": "1"}, id="other-start-time"),
        pytest.param(lambda note: {**note, "pid": note["pid"] + 1}, id="other-pid"),
        pytest.param(lambda note: {**note, "session_id": OTHER_SESSION}, id="other-id"),
        pytest.param(None, id="no-note"),
    ],
)
def test_anything_less_certain_stays_an_ended_sessions_workflow(
    repo: Path, private_home: Path, owned: Path, cli, tamper
) -> None:
    note_file = owned / "plan-build-owner.json"
    if tamper is None:
        note_file.unlink()
    else:
        note_file.write_text(json.dumps(tamper(json.loads(note_file.read_text()))))
    clear(private_home, repo)

    r = cli("review.status", "--json", cwd=repo)

    assert json.loads(r.stdout).get("workflow") is None
    assert "No active workflow found." in r.stderr
    assert owned.name in r.stderr  # named as an ended session's, for --workflow
    assert json.loads((owned / "workflow.json").read_text())["owner_session_id"] == SESSION_ID
