"""`plan-build dispatch TASK-ID` with the real `codex exec` against the loopback Responses API.

The API plays the model: it asks Codex to run shell commands with Codex's own `exec_command`
tool (so the real Codex edits the repository inside its workspace-write sandbox), then answers
with a final message. plan-build's argv, prompt, event parsing, `-o` handling, scope check and
time limit meet the real program.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from plan_build.dispatch import recipe as recipes
from plan_build.dispatch import runner as dispatch
from plan_build.dispatch import telemetry
from tests.contract.conftest import Agents
from tests.contract.fakeapis import ResponsesApi
from tests.support.dispatching import make_plan, status_of
from tests.support.gitcmd import git
from tests.support.sessions import make_session

pytestmark = pytest.mark.contract

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}  # no AgentMemory slot in these runs
FIX = "printf 'def view(page=1):\\n    return []  # fixed\\n' > src/app.py"


def state_dir(repo: Path) -> Path:
    return repo / ".git" / "plan-build"


def attempts(repo: Path) -> list[dict[str, Any]]:
    rows, _ = telemetry.read(state_dir(repo))
    return [r for r in rows if r["kind"] == "attempt"]


def run_file(repo: Path, name: str) -> Path:
    [path] = (state_dir(repo) / "dispatch" / "runs").glob(f"*/{name}")
    return path


def test_codex_implements_the_task_and_dispatch_verifies_it(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.commands = [FIX]
    codex_api.reply = "Added a page parameter to view()."

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "TASK-002 -> Review · verified on attempt 1" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert "# fixed" in (repo / "src" / "app.py").read_text()  # the real Codex made the edit
    # the prompt plan-build rendered reached the model unchanged, with the recipe's settings
    prompt = run_file(repo, "attempt-1.prompt.md").read_text()
    assert prompt.startswith("# TASK-002: Paginate the audit log\n")
    assert codex_api.last_user_text(0) == prompt
    first = codex_api.turns()[0].body
    assert first["model"] == "gpt-5.5"
    assert first["reasoning"]["effort"] == "high"
    assert codex_api.turn_metadata(0)["sandbox_mode"] == "workspace-write"
    # -o FILE and the event stream, as plan-build read them
    assert run_file(repo, "attempt-1.last-message.md").read_text() == codex_api.reply
    stream = run_file(repo, "attempt-1.events.jsonl").read_text()
    thread = json.loads(stream.splitlines()[0])["thread_id"]
    [attempt] = attempts(repo)
    assert attempt["codex"]["exit"] == 0
    assert attempt["codex"]["thread_id"] == thread
    # the mock reports 10 input / 5 output tokens per request; Codex sums them per turn
    requests = len(codex_api.turns())
    assert attempt["usage"]["input"] == 10 * requests
    assert attempt["usage"]["output"] == 5 * requests


def test_an_edit_outside_the_scope_is_caught_after_the_real_codex_ran(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.commands = [FIX, "mkdir -p config && echo 'DEBUG = True' > config/settings.py"]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "outside the scope: config/settings.py" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    assert (repo / "config" / "settings.py").read_text() == "DEBUG = True\n"


def test_a_scope_request_in_the_final_message_blocks_without_verifying(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.reply = (
        "I stopped.\nSCOPE EXPANSION NEEDED: src/models.py - the page size lives there"
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "Codex reported the task needs files outside the allowed scope" in r.stderr
    assert "Codex asked: SCOPE EXPANSION NEEDED: src/models.py" in tasks_md.read_text()


def test_a_refused_turn_blocks_with_codexs_message(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.scenario = "unauthorized"

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "Codex exited with an error" in r.stderr
    assert "Codex reported: unexpected status 401 Unauthorized" in tasks_md.read_text()
    [attempt] = attempts(repo)
    assert attempt["codex"]["exit"] == 1
    assert run_file(repo, "attempt-1.last-message.md").read_text() == ""


def test_codex_waiting_on_a_silent_api_is_stopped_at_the_time_limit(
    repo: Path, agents: Agents, codex_api: ResponsesApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks_md = make_plan(repo)
    codex_api.scenario = "hang"
    for key, value in DEGRADED.items():
        monkeypatch.setenv(key, value)
    session, _, err = make_session(repo)
    quick = recipes.Recipe(
        id="contract-quick",
        roles=recipes.RECIPE.roles,
        limits=recipes.Limits(
            max_corrections=2, codex_timeout_seconds=4, verification_timeout_seconds=60
        ),
    )

    started = time.monotonic()
    result = dispatch.run(session, "TASK-002", recipe=quick)

    leftovers = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(str(state_dir(repo)) in part for part in (p.info["cmdline"] or []))
    ]
    assert leftovers == []
    assert time.monotonic() - started < 30
    assert result.status == "Blocked"
    assert result.reason == "codex_timeout"
    assert "Codex did not finish within the time limit" in err.getvalue()
    assert codex_api.turns()  # Codex did reach the API, which never answered
    assert "codex stopped after" in tasks_md.read_text()


# ----------------------------------------------------------------------------- misbehaviour


def _codex_group(repo: Path, timeout: float = 60) -> int:
    """The process group of the real `codex exec` plan-build started for `repo`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in psutil.process_iter(["cmdline", "cwd"]):
            cmd = p.info["cmdline"] or []
            if "exec" in cmd and "--json" in cmd and p.info["cwd"] == str(repo):
                return os.getpgid(p.pid)
        time.sleep(0.1)
    raise AssertionError("codex exec never started")


def _group_members(pgid: int) -> list[int]:
    alive = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


def test_sigkill_of_plan_build_takes_codex_with_it_and_the_resume_checks_the_old_baseline(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.commands = [
        "mkdir -p config && echo 'DEBUG = True' > config/settings.py",
        "mkdir -p tests && touch tests/started && sleep 8 && echo late > late.txt",
    ]
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002"],
        cwd=repo,
        env={**os.environ, **DEGRADED},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    pgid = _codex_group(repo)
    deadline = time.monotonic() + 60
    while not (repo / "tests" / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (repo / "tests" / "started").exists()

    child.send_signal(signal.SIGKILL)
    child.wait(10)
    time.sleep(3)
    assert _group_members(pgid) == []  # nothing of Codex outlived plan-build
    time.sleep(8)
    assert not (repo / "late.txt").exists()  # and nothing wrote after the kill

    # the rerun resumes the same dispatch: the dead run's baseline, the same budget of runs
    codex_api.commands = [FIX]
    turns = len(codex_api.turns())
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 6, r.stderr
    assert "outside the scope: config/settings.py" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert text.count("<!-- plan-build:dispatch ") == 2  # one block: the same dispatch went on
    assert "Outside the scope: `config/settings.py`" in text
    # the dead run's attempt counts; it changed files outside the scope, so no new run starts
    assert [(a["attempt"], a["outcome"]) for a in attempts(repo)] == [(1, "scope")]
    assert len(codex_api.turns()) == turns


def test_codexs_edits_to_tasks_md_are_reported_and_undone(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.commands = [
        FIX,
        "sed -i -e 's/^Status: Pending/Status: Complete/' "
        "-e 's/^grep -q csv src\\/export.py/true/' TASKS.md",
    ]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "outside the scope: TASKS.md" in r.stderr
    text = tasks_md.read_text()
    assert status_of(tasks_md, "TASK-003") == "Pending"  # no forged Complete
    assert "grep -q csv src/export.py" in text  # nor a forged verification command
    assert "`TASKS.md` was changed by Codex; plan-build owns it during a dispatch" in text
    assert "`TASKS.md (Codex's edit undone)`" in text


def test_edits_to_ignored_files_outside_the_scope_are_caught(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    (repo / ".gitignore").write_text("local.env\nbuild/\nnode_modules/\n")
    (repo / "local.env").write_text("API_URL=http://localhost\n")
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    tasks_md = make_plan(repo)
    codex_api.commands = [
        FIX,
        "echo 'API_URL=http://evil' > local.env && mkdir -p build && "
        "echo 'echo pwned' > build/injected.sh && echo 2 >> node_modules/left-pad/index.js",
    ]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    for path in ("local.env", "build/injected.sh", "node_modules/left-pad/index.js"):
        assert f"outside the scope: {path}" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    assert "Ignored by git: `build/injected.sh`, `local.env`" in tasks_md.read_text()


def test_caches_from_codex_running_the_checks_are_by_products_not_violations(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)  # nothing is ignored: __pycache__ is an untracked directory
    codex_api.commands = [
        FIX,
        "python3 -m py_compile src/app.py && mkdir -p .pytest_cache/v"
        " && echo '{}' > .pytest_cache/v/lastfailed",
    ]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert list((repo / "src" / "__pycache__").glob("app.*.pyc"))  # Codex really made it
    assert status_of(tasks_md, "TASK-002") == "Review"
    text = tasks_md.read_text()
    assert "By-products of running checks (not judged against the scope): `.pytest_cache/" in text
    assert "src/__pycache__/app." in text


def test_a_sandbox_that_cannot_create_namespaces_blocks_at_once(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi, tmp_path: Path
) -> None:
    """The real codex under a user namespace whose namespace limit is 0: bubblewrap fails
    with ENOSPC for every command, Codex exits 0 anyway."""
    shim = tmp_path / "shim"
    shim.mkdir()
    real = agents.clis.bin / "codex"
    (shim / "codex").write_text(
        "#!/bin/sh\nexec unshare -U -r sh -c "
        '\'echo 0 > /proc/sys/user/max_user_namespaces; exec "$0" "$@"\' '
        f'{real} "$@"\n'
    )
    (shim / "codex").chmod(0o755)
    tasks_md = make_plan(repo)
    codex_api.commands = [FIX]
    env = {**DEGRADED, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}

    r = cli("dispatch", "TASK-002", cwd=repo, env=env)

    assert r.code == 6, r.stderr
    assert "Codex's sandbox could not start" in r.stderr
    assert "attempt 2" not in r.stderr  # no correction spent on it
    assert "Sandbox error (1 command): bwrap: Creating new namespace failed" in tasks_md.read_text()
    # with a working sandbox the unchanged task runs again
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr


def test_an_empty_nested_repository_is_a_path_that_appeared(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.commands = [FIX, "git init -q tests/fixture_repo && ls tests/fixture_repo/.git"]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert (repo / "tests" / "fixture_repo" / ".git").is_dir()  # the real Codex made it
    assert r.code == 0, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert "`tests/fixture_repo`" in tasks_md.read_text()


def test_a_codex_failure_before_any_event_shows_codexs_own_error(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    missing = agents.home / "no-such-codex-home"

    r = cli("dispatch", "TASK-002", cwd=repo, env={**DEGRADED, "CODEX_HOME": str(missing)})

    assert r.code == 6
    assert "codex: Error finding codex home: CODEX_HOME points to" in r.stderr
    text = tasks_md.read_text()
    assert "but that path does not exist" in text
    assert str(agents.home) not in text  # the home directory never lands in TASKS.md


def test_codex_sees_the_committed_identity_and_a_foreign_one_is_refused(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    make_plan(repo)
    codex_api.commands = [
        FIX,
        "mkdir -p tests && env | grep -E '^(AGENTMEMORY|PLAN_BUILD)_' > tests/env.txt",
    ]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    seen = (repo / "tests" / "env.txt").read_text().splitlines()
    assert "AGENTMEMORY_PROJECT_NAME=github.com/ana/shop" in seen
    assert "PLAN_BUILD_MEMORY_MODE=degraded" in seen
    assert "AGENTMEMORY_INJECT_CONTEXT=false" in seen

    turns = len(codex_api.turns())
    foreign = {**DEGRADED, "AGENTMEMORY_PROJECT_NAME": "github.com/bob/other"}
    r = cli("dispatch", "TASK-002", cwd=repo, env=foreign)
    assert r.code == 3
    assert "AGENTMEMORY_PROJECT_NAME is 'github.com/bob/other'" in r.stderr
    assert "Codex would write memory into another project" in r.stderr
    assert len(codex_api.turns()) == turns  # Codex never started


def test_codex_changing_nothing_twice_stops_as_no_change(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.reply = "Pagination is already there; I changed nothing."

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "attempt 3" not in r.stderr
    assert "Codex made no change in two attempts in a row" in r.stderr
    assert "it said: “Pagination is already there; I changed nothing.”" in tasks_md.read_text()
    assert [a["outcome"] for a in attempts(repo)] == ["no_change", "no_change"]


def test_codexs_git_add_attempt_is_named_in_the_evidence(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    """codex 0.171 sometimes leaves an instant command out of its --json stream (it ran: the
    model got its output), so the command takes a second to be reported every time."""
    tasks_md = make_plan(repo)
    codex_api.commands = [FIX, "sleep 1 && git add src/app.py"]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    stream = run_file(repo, "attempt-1.events.jsonl").read_text()
    assert r.code == 0, r.stderr  # the sandbox refused it: nothing moved
    assert (
        "Codex ran a git command the prompt forbids: "
        "`/bin/bash -lc 'sleep 1 && git add src/app.py' (failed)`"
    ) in tasks_md.read_text(), f"{r.stderr}\n{stream}"


def test_json_prints_the_result_when_the_real_codex_is_interrupted(
    repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    make_plan(repo)
    codex_api.commands = ["mkdir -p tests && touch tests/started && sleep 20"]
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002", "--json"],
        cwd=repo,
        env={**os.environ, **DEGRADED},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (repo / "tests" / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)

    assert child.returncode == 130, err
    result = json.loads(out)
    assert (result["status"], result["reason"]) == ("In Progress", "interrupted")


def test_the_in_progress_note_names_the_attempt_the_real_codex_is_running(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    tasks_md = make_plan(repo)
    codex_api.commands = ["mkdir -p tests && cp TASKS.md tests/seen-$(date +%s%N).md"]

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6  # verification never passes: three runs
    seen = sorted((repo / "tests").glob("seen-*.md"))
    assert len(seen) == 3
    notes = [p.read_text() for p in seen]
    assert "attempt 1 (implementer) running under pid" in notes[0]
    assert "attempt 2 (corrector) running under pid" in notes[1]
    assert "attempt 3 (corrector) running under pid" in notes[2]
    assert status_of(tasks_md, "TASK-002") == "Blocked"


def test_a_wave_of_two_tasks_lands_both_results_in_the_work_tree(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    """`dispatch --wave`: two real Codex runs side by side, each in its own worktree under the
    git common dir, each verified there, both results applied to the user's work tree."""
    from tests.support.waves import make_wave_plan, task, wave_dirs, worktree_list

    tasks_md = make_wave_plan(
        repo,
        [
            task("TASK-002", "src/a.py", "grep -q A-DONE src/a.py"),
            task("TASK-003", "src/b.py", "grep -q B-DONE src/b.py"),
        ],
    )
    codex_api.commands_by_prompt = {
        "(task-002)": ["printf 'a1\\nA-DONE\\n' > src/a.py"],
        "(task-003)": ["printf 'B-DONE\\n' > src/b.py"],
    }
    codex_api.reply = "Done."

    r = cli("dispatch", "--wave", "--jobs", "2", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(t["task"], t["status"], t["outcome"]) for t in out["tasks"]] == [
        ("TASK-002", "Review", "applied"),
        ("TASK-003", "Review", "applied"),
    ]
    assert (repo / "src" / "a.py").read_text() == "a1\nA-DONE\n"
    assert (repo / "src" / "b.py").read_text() == "B-DONE\n"
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert status_of(tasks_md, "TASK-003") == "Review"
    # the real Codex ran in the worktrees (its sandbox allowed writes there), not the repo
    prompts = [codex_api.last_user_text(i) for i in range(len(codex_api.turns()))]
    assert any("(task-002)" in p for p in prompts)
    assert any("(task-003)" in p for p in prompts)
    assert wave_dirs(repo) == []
    assert worktree_list(repo) == [str(repo)]


def test_a_wave_of_four_project_shapes_verifies_green_with_the_real_codex(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    """Issue 38 item 9 with the real codex: checks that need a gitignored `.venv` and `.env`
    (`.worktreeinclude`), a `node_modules` (Claude's `worktree.symlinkDirectories`) and a
    submodule's contents all pass in the wave's worktrees, at the first Codex run."""
    from tests.support.waves import wave_dirs, worktree_list
    from tests.test_wave_projects import four_shapes

    tasks_md = four_shapes(repo, repo.parent)
    codex_api.commands_by_prompt = {
        "(task-002)": ["printf 'A-DONE\\n' > src/a.py"],
        "(task-003)": ["printf 'B-DONE\\n' > src/b.py"],
        "(task-004)": ["printf 'C-DONE\\n' > src/c.py"],
        "(task-005)": ["printf 'D\\n' > src/d.py"],
    }
    codex_api.reply = "Done."

    r = cli("dispatch", "--wave", "--jobs", "4", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(t["task"], t["status"], t["outcome"]) for t in out["tasks"]] == [
        (tid, "Review", "applied") for tid in ("TASK-002", "TASK-003", "TASK-004", "TASK-005")
    ]
    for tid in ("TASK-002", "TASK-003", "TASK-004", "TASK-005"):
        assert status_of(tasks_md, tid) == "Review"
    assert (repo / "src" / "c.py").read_text() == "C-DONE\n"
    assert git(repo, "status", "--porcelain") == (
        " M TASKS.md\n M src/a.py\n M src/b.py\n M src/c.py\n M src/d.py\n"
    )
    assert (repo / "node_modules" / ".bin" / "check").is_file()
    assert wave_dirs(repo) == []
    assert worktree_list(repo) == [str(repo)]
