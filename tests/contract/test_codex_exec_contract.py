"""The real `codex exec` against a loopback Responses API, run through plan-build's process seam
(`plan_build.core.proc.run`: stdin closed, timeout, whole-tree kill).

These prove what dispatch (`codex exec --sandbox workspace-write --json -o FILE <prompt>`) and
Codex review rounds (`codex exec --sandbox read-only …`) rely on: the prompt argument reaches the
model verbatim, a closed stdin adds nothing, the `--json` event stream has the shapes the stubs
print (tests/support/stubtool.py), `-o FILE` holds the last message on success and keeps stale
text on failure, and only the caller's timeout ends a run whose API never answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from plan_build.core import proc
from tests.contract.conftest import Agents
from tests.contract.fakeapis import ResponsesApi
from tests.support import dispatching as dispatch_support
from tests.support import reviewkit, stubtool
from tests.support.gitcmd import git

pytestmark = pytest.mark.contract

PROMPT = (
    "# Task T-7: paginate the audit log\n\n"
    "Keep `{{ api }}` compatible ✔ — $HOME and 'quotes' stay literal.\n"
    "--this line looks like a flag\n"
)
RUN_TIMEOUT = 60.0


@pytest.fixture
def workdir(agents: Agents, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository for Codex to work in; the mock's key in MOCK_API_KEY."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q")
    monkeypatch.setenv("MOCK_API_KEY", "contract-key")
    return root


def exec_argv(api: ResponsesApi, sandbox: str, out: Path, prompt: str) -> list[str]:
    """plan-build's `codex exec` argv, with the mock provider's `-c` overrides added."""
    return [
        "codex",
        "exec",
        *api.codex_flags(),
        "--sandbox",
        sandbox,
        "--json",
        "-o",
        str(out),
        prompt,
    ]


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def without_warnings(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Codex reports config warnings as `error` items (e.g. no metadata for a custom model)."""
    return [
        e for e in stream if not (e["type"] == "item.completed" and e["item"]["type"] == "error")
    ]


def kinds(stream: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """Each event's type, with its item's type for item events."""
    return [(e["type"], e["item"]["type"] if "item" in e else None) for e in stream]


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys and types, not contents."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def test_exec_gets_the_prompt_verbatim_and_reports_the_reply(
    agents: Agents, responses_api: ResponsesApi, workdir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "last-message.md"
    responses_api.reply = "Done: T-7 is implemented.\nSCOPE OK"
    r = proc.run(
        exec_argv(responses_api, "workspace-write", out, PROMPT),
        cwd=workdir,
        timeout=RUN_TIMEOUT,
    )
    assert r.returncode == 0, r.stderr
    # the model got the argument unchanged, and nothing from stdin (proc.run closes it)
    [turn] = responses_api.turns()
    assert responses_api.last_user_text() == PROMPT
    assert "<stdin>" not in json.dumps(turn.body)
    assert responses_api.turn_metadata()["sandbox_mode"] == "workspace-write"
    # -o holds exactly the last agent message
    assert out.read_text() == responses_api.reply
    # the event stream has the shapes the stub prints for `codex exec --json`
    real = without_warnings(events(r.stdout))
    stub = events(stubtool.codex_exec_events(responses_api.reply))
    assert kinds(real) == kinds(stub)
    assert shape(real) == shape(stub)
    # and so do the review and dispatch scenario helpers built on it
    reply = responses_api.reply
    for helper in (reviewkit.codex_events(reply), dispatch_support.events(reply)):
        assert kinds(events(helper)) == kinds(real)
        assert shape(events(helper)) == shape(real)
    assert real[-2]["item"] == {
        "id": real[-2]["item"]["id"],
        "type": "agent_message",
        "text": responses_api.reply,
    }
    assert set(real[-1]["usage"]) == set(stubtool.CODEX_USAGE)


def test_a_prompt_that_starts_with_a_dash_needs_the_separator(
    agents: Agents, responses_api: ResponsesApi, workdir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "last.md"
    argv = exec_argv(responses_api, "read-only", out, "--")
    r = proc.run([*argv, "-starts like a flag"], cwd=workdir, timeout=RUN_TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert responses_api.last_user_text() == "-starts like a flag"
    bare = proc.run(exec_argv(responses_api, "read-only", out, "-x"), cwd=workdir, timeout=30)
    assert bare.returncode == 2
    assert "unexpected argument '-x'" in bare.stderr


def test_review_rounds_run_read_only_through_exec_not_codex_review(
    agents: Agents, responses_api: ResponsesApi, workdir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "review.md"
    responses_api.reply = "No findings."
    r = proc.run(
        exec_argv(responses_api, "read-only", out, "Review the plan in PLAN.md."),
        cwd=workdir,
        timeout=RUN_TIMEOUT,
    )
    assert r.returncode == 0, r.stderr
    assert responses_api.turn_metadata()["sandbox_mode"] == "read-only"
    assert out.read_text() == "No findings."
    # `codex review` cannot take custom instructions with a target, nor a sandbox flag
    clash = proc.run(["codex", "review", "--uncommitted", "focus on tests"], cwd=workdir)
    assert clash.returncode == 2
    assert "cannot be used with" in clash.stderr
    sandbox = proc.run(["codex", "review", "-s", "read-only"], cwd=workdir)
    assert sandbox.returncode == 2
    assert "unexpected argument '-s'" in sandbox.stderr


def test_a_refused_turn_fails_and_leaves_a_stale_o_file_untouched(
    agents: Agents, responses_api: ResponsesApi, workdir: Path, tmp_path: Path
) -> None:
    responses_api.scenario = "unauthorized"
    stale = tmp_path / "stale.md"
    stale.write_text("the previous attempt's message\n")
    fresh = tmp_path / "fresh.md"
    r = proc.run(
        exec_argv(responses_api, "workspace-write", stale, PROMPT), cwd=workdir, timeout=RUN_TIMEOUT
    )
    assert r.returncode == 1
    assert stale.read_text() == "the previous attempt's message\n"  # delete -o FILE before a run
    real = without_warnings(events(r.stdout))
    assert real[-1]["type"] == "turn.failed"
    assert "401" in real[-1]["error"]["message"]
    error = real[-1]["error"]["message"]
    stub = events(stubtool.codex_exec_failed_events(error))
    assert kinds(real) == kinds(stub)
    assert shape(real) == shape(stub)
    for helper in (
        str(reviewkit.codex_failure(error)["stdout"]),
        dispatch_support.events(failed=error),
    ):
        assert kinds(events(helper)) == kinds(real)
        assert shape(events(helper)) == shape(real)

    r = proc.run(
        exec_argv(responses_api, "workspace-write", fresh, PROMPT), cwd=workdir, timeout=RUN_TIMEOUT
    )
    assert r.returncode == 1
    assert fresh.exists()
    assert fresh.read_text() == ""  # created empty: an empty -o file is not a reply


def test_an_api_that_never_answers_is_ended_by_the_callers_timeout(
    agents: Agents, responses_api: ResponsesApi, workdir: Path, tmp_path: Path
) -> None:
    responses_api.scenario = "hang"
    out = tmp_path / "hang-marker-last.md"
    started = time.monotonic()
    with pytest.raises(proc.CommandTimeout) as caught:
        proc.run(exec_argv(responses_api, "workspace-write", out, PROMPT), cwd=workdir, timeout=5)
    spent = time.monotonic() - started
    # nothing of that run is left behind (anything found is stopped, then reported)
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(str(out) in part for part in (p.info["cmdline"] or []))
    ]
    for p in leftovers:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    assert [p.pid for p in leftovers] == []
    assert spent < 5 + 2 * proc.KILL_GRACE + 3
    assert [e["type"] for e in events(caught.value.stdout)][:1] == ["thread.started"]
    assert responses_api.turns()  # it did reach the API and was waiting for an answer


def test_stdin_left_open_holds_exec_until_it_closes(
    agents: Agents, responses_api: ResponsesApi, workdir: Path, tmp_path: Path
) -> None:
    """Why plan-build never leaves Codex's stdin open: exec reads it to the end first."""
    out = tmp_path / "stdin.md"
    child = subprocess.Popen(
        exec_argv(responses_api, "read-only", out, "the prompt"),
        cwd=workdir,
        env=dict(os.environ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)
        assert child.poll() is None
        assert responses_api.turns() == []
        child.communicate("piped text\n", timeout=RUN_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == 0
    text = responses_api.last_user_text()
    assert text.startswith("the prompt")
    assert "piped text" in text
