"""Dispatch when Codex misbehaves (issue 11): orphans after a SIGKILL, the lock takeover, the
resumed dispatch's baseline and budget, Codex editing TASKS.md.

Codex is the stub on PATH (tests/support/stubtool.py); the real-Codex versions of these
reproductions are in tests/contract/test_dispatch_contract.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from plan_build.dispatch import evidence
from tests.support.dispatching import codex_edits, codex_runs, make_plan, status_of
from tests.support.stubs import Stubs

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def state_dir(repo: Path) -> Path:
    return repo / ".git" / "plan-build"


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(check: Any, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


def start_dispatch(repo: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002"],
        cwd=repo,
        env=dict(os.environ, **DEGRADED),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def test_sigkill_of_plan_build_takes_codex_and_its_children_with_it(
    repo: Path, stubs: Stubs
) -> None:
    make_plan(repo)
    stubs.rule(
        "codex",
        {"match": ["exec"], "write": {"src/app.py": "half\n"}, "sleep": 60, "grandchild": True},
    )
    child = start_dispatch(repo)
    assert wait_until((stubs.home / "codex.grandchild").exists)
    codex_pid = int((stubs.home / "codex.pid").read_text())
    grandchild = int((stubs.home / "codex.grandchild").read_text())

    child.send_signal(signal.SIGKILL)
    child.wait(10)

    # the grandchild ignores SIGTERM: the supervisor's SIGKILL follows after its grace
    assert wait_until(lambda: gone(codex_pid) and gone(grandchild), timeout=10)


def test_a_takeover_stops_the_dead_runs_survivors_but_never_a_reused_pid(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    make_plan(repo)
    lock = state_dir(repo) / "dispatch" / "lock"
    lock.parent.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    survivor = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        started = psutil.Process(survivor.pid).create_time()
        group = {"pgid": survivor.pid, "started": started}
        lock.write_text(json.dumps({"pid": dead.pid, "task": "TASK-002", "group": group}))
        codex_edits(stubs, {"src/app.py": "fixed\n"})

        r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

        assert r.code == 0, r.stderr
        assert f"stopped 1 process a dead dispatch left running (pids {survivor.pid})" in r.stderr
        assert survivor.wait(5) is not None
        # same pid number, another start time: a different process, left alone
        other = psutil.Process(stranger.pid).create_time() - 100
        lock.write_text(
            json.dumps(
                {
                    "pid": dead.pid,
                    "task": "TASK-002",
                    "group": {"pgid": stranger.pid, "started": other},
                }
            )
        )
        codex_edits(stubs, {"src/app.py": "fixed again\n"})
        r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
        assert r.code == 0, r.stderr
        assert stranger.poll() is None
    finally:
        for p in (survivor, stranger):
            p.kill()
            p.wait()


def test_a_resumed_dispatch_checks_the_dead_runs_baseline(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "write": {"config/settings.py": "DEBUG = True\n"},
            "sleep": 60,
            "times": 1,
        },
    )
    child = start_dispatch(repo)
    assert wait_until((repo / "config" / "settings.py").exists)
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "resuming dispatch" in r.stderr
    assert "outside the scope: config/settings.py" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    assert len(codex_runs(stubs)) == 1  # no new Codex run on top of an out-of-scope edit
    assert "Attempt 1 · implementer" in tasks_md.read_text()


def test_runs_before_the_kill_count_against_the_same_budget(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "not yet\n"}, times=1)
    stubs.rule("codex", {"match": ["exec"], "sleep": 60, "times": 1})
    # the first rule is the newest: swap so attempt 1 edits and attempt 2 hangs
    rules = json.loads((stubs.home / "codex.json").read_text())
    (stubs.home / "codex.json").write_text(json.dumps([rules[1], rules[0], *rules[2:]]))
    child = start_dispatch(repo)
    assert wait_until(lambda: len(codex_runs(stubs)) == 2)
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    codex_edits(stubs, {"src/app.py": "still not\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "resuming dispatch" in r.stderr
    assert "2 of 3 Codex runs used" in r.stderr
    assert len(codex_runs(stubs)) == 3  # one more run: the budget is three in all
    text = tasks_md.read_text()
    assert "verification still fails after the last allowed correction" in text
    assert "- Attempt 3 ·" in text


def test_codex_editing_tasks_md_is_reported_and_undone(repo: Path, stubs: Stubs, cli: Any) -> None:
    tasks_md = make_plan(repo)
    forged = tasks_md.read_text().replace(
        "## TASK-003: Export the audit log\n\nStatus: Pending",
        "## TASK-003: Export the audit log\n\nStatus: Complete",
    )
    codex_edits(stubs, {"src/app.py": "fixed\n", "TASKS.md": forged})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "outside the scope: TASKS.md" in r.stderr
    assert status_of(tasks_md, "TASK-003") == "Pending"  # the forged status is gone
    text = tasks_md.read_text()
    assert "`TASKS.md` was changed by Codex; plan-build owns it during a dispatch" in text
    assert "`TASKS.md (Codex's edit undone)`" in text


def test_a_tasks_md_edit_made_while_the_dispatch_was_dead_is_reported_like_codexs(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    """Between a SIGKILL and the resume nobody watched TASKS.md: the resume compares it with
    the bytes saved when the stopped Codex run began, apart from what plan-build wrote."""
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {"match": ["exec"], "write": {"src/app.py": "half\n"}, "sleep": 60, "times": 1},
    )
    child = start_dispatch(repo)
    assert wait_until(lambda: (repo / "src" / "app.py").read_text() == "half\n")
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    forged = tasks_md.read_text().replace(
        "## TASK-003: Export the audit log\n\nStatus: Pending",
        "## TASK-003: Export the audit log\n\nStatus: Complete",
    )
    tasks_md.write_text(forged)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "resuming dispatch" in r.stderr
    assert "outside the scope: TASKS.md" in r.stderr
    assert len(codex_runs(stubs)) == 1  # no new Codex run on top of it
    assert status_of(tasks_md, "TASK-003") == "Pending"  # plan-build's version is back
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert "`TASKS.md` was changed after the stopped Codex run began" in text
    assert "`TASKS.md (Codex's edit undone)`" in text
    (kept,) = state_dir(repo).glob("dispatch/runs/*/attempt-1.TASKS.md.undone")
    assert status_of(kept, "TASK-003") == "Complete"  # the edit is not lost


def test_a_resume_without_an_edit_in_between_runs_codex_again(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    """plan-build's own writes across the stop (Status, the dispatch's block) are no edit."""
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {"match": ["exec"], "write": {"src/app.py": "half\n"}, "sleep": 60, "times": 1},
    )
    child = start_dispatch(repo)
    assert wait_until(lambda: (repo / "src" / "app.py").read_text() == "half\n")
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "resuming dispatch" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert "TASKS.md" not in tasks_md.read_text().split("Changed since the dispatch began")[1]


# ----------------------------------------------------------------------------- ignored paths


def test_a_change_to_an_ignored_path_outside_the_scope_blocks(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    (repo / ".gitignore").write_text("local.env\nbuild/\n.venv/\n")
    (repo / "local.env").write_text("A=1\n")
    (repo / ".venv" / "lib").mkdir(parents=True)
    (repo / ".venv" / "lib" / "site.py").write_text("# untouched\n")
    tasks_md = make_plan(repo)
    codex_edits(
        stubs, {"src/app.py": "fixed\n", "local.env": "A=2\n", "build/injected.sh": "echo hi\n"}
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "outside the scope: local.env" in r.stderr
    assert "outside the scope: build/injected.sh" in r.stderr
    assert ".venv" not in r.stderr  # an untouched ignored tree is not reported
    text = tasks_md.read_text()
    assert "Ignored by git: `build/injected.sh`, `local.env`" in text
    assert status_of(tasks_md, "TASK-002") == "Blocked"


def test_an_ignored_path_inside_the_scope_is_fine(repo: Path, stubs: Stubs, cli: Any) -> None:
    (repo / ".gitignore").write_text("tests/fixtures/\n")
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n", "tests/fixtures/data.json": "{}\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "2 files changed, all in scope" in r.stderr


def test_check_caches_are_by_products_whether_ignored_or_not(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    (repo / ".gitignore").write_text(".mypy_cache/\n")
    (repo / ".plan-build.yaml").write_text("dispatch:\n  byproducts:\n    - .cache/\n")
    tasks_md = make_plan(repo)
    codex_edits(
        stubs,
        {
            "src/app.py": "fixed\n",
            "src/__pycache__/app.cpython-311.pyc": "x",
            "deep/pkg/mod.pyc": "x",
            ".pytest_cache/v/cache/lastfailed": "{}",
            ".mypy_cache/3.11/app.meta.json": "{}",
            ".cache/tool/state": "1",
        },
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "1 file changed, all in scope (+5 check by-products)" in r.stderr
    text = tasks_md.read_text()
    assert "By-products of running checks (not judged against the scope):" in text
    assert "`.mypy_cache/3.11/app.meta.json`" in text
    assert "`src/__pycache__/app.cpython-311.pyc`" in text


def test_a_byproduct_glob_that_covers_everything_is_refused(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    (repo / ".plan-build.yaml").write_text("dispatch:\n  byproducts:\n    - '**'\n")
    tasks_md = make_plan(repo)
    before = tasks_md.read_text()

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 2
    assert "dispatch.byproducts entry '**' would make every path a by-product" in r.stderr
    assert tasks_md.read_text() == before
    assert codex_runs(stubs) == []


# ----------------------------------------------------------------------------- sandbox


BWRAP = (
    "bwrap: Creating new namespace failed: nesting depth or "
    "/proc/sys/user/max_*_namespaces exceeded (ENOSPC)"
)
# macOS: Seatbelt does not nest (github.com/openai/codex/issues/45657), sandbox-exec exits 71
SEATBELT = "sandbox-exec: sandbox_apply: Operation not permitted"


def sandbox_failure_events(message: str = BWRAP) -> str:
    """What the real codex 0.171 prints when bubblewrap cannot create its namespaces: every
    command fails with bwrap's error, Codex still ends its turn and exits 0 (on macOS the same
    shape carries Seatbelt's words)."""
    cmd = "/bin/bash -lc 'echo hi > src/app.py'"
    rows: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": "01a23366-80e2-7f62-b2b6-4b44c7ee9b8d"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {
                "id": "item_0",
                "type": "command_execution",
                "command": cmd,
                "aggregated_output": message + "\n",
                "exit_code": 1,
                "status": "failed",
            },
        },
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "x"}},
        {"type": "turn.completed", "usage": {"input_tokens": 20, "output_tokens": 10}},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.mark.parametrize("message", [BWRAP, SEATBELT], ids=["bubblewrap", "seatbelt"])
def test_a_sandbox_that_cannot_start_blocks_at_once_and_the_task_can_run_again(
    repo: Path, stubs: Stubs, cli: Any, message: str
) -> None:
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "stdout": sandbox_failure_events(message),
            "write_flag": {"-o": "x"},
            "times": 1,
        },
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "Codex's sandbox could not start, so none of its commands ran" in r.stderr
    assert "unprivileged user namespaces" in r.stderr  # the fix (this is Linux)
    assert len(codex_runs(stubs)) == 1  # no correction spent
    assert "verify" not in [c["tool"] for c in stubs.calls()]
    text = tasks_md.read_text()
    assert f"Sandbox error (1 command): {message[:40]}" in text
    # once the sandbox works, the same task text dispatches again
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0
    assert status_of(tasks_md, "TASK-002") == "Review"


# ----------------------------------------------------------------------------- nested repos


def test_an_empty_nested_repository_is_a_path_that_appeared(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    # a real `git init` inside the work tree, as Codex's command would make it
    codex_edits(
        stubs,
        {"src/app.py": "fixed\n"},
        message="done",
        run=["git", "init", "-q", "tests/fixture_repo"],
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "2 files changed, all in scope" in r.stderr
    assert "`tests/fixture_repo`" in tasks_md.read_text()
    # and reruns work the same way
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0


def test_a_nested_repository_outside_the_scope_blocks_by_path(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(
        stubs,
        {"src/app.py": "fixed\n"},
        message="done",
        run=["git", "init", "-q", "vendor/newcrate"],
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "outside the scope: vendor/newcrate" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"


def test_a_snapshot_failure_never_leaves_the_task_in_progress(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    # git itself fails to snapshot once Codex ran (a git on PATH that refuses `add` then)
    marker = stubs.home / "git-fails"
    real_git = shutil.which("git")
    wrapper = stubs.bin / "git"
    wrapper.write_text(
        f'#!/bin/sh\nif [ -e "{marker}" ]; then for a in "$@"; do if [ "$a" = add ]; then '
        f'echo "fatal: {repo}/src: simulated failure" >&2; exit 128; fi; done; fi\n'
        f'exec {real_git} "$@"\n'
    )
    wrapper.chmod(0o755)
    codex_edits(stubs, {"src/app.py": "fixed\n", str(marker): "1"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert "plan-build stopped during attempt 1 (scope check)" in text
    assert str(repo) not in text  # repository-relative paths only


# ----------------------------------------------------------------------------- smaller items


def test_a_codex_failure_before_any_event_shows_its_stderr_redacted(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    home = os.environ["HOME"]
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "exit": 1,
            "stderr": f'Error finding codex home: CODEX_HOME points to "{home}/.codex-x", but '
            "that path does not exist\nauth header: contract-secret-value-123\n",
        },
    )
    env = {**DEGRADED, "MOCK_API_TOKEN": "contract-secret-value-123"}

    r = cli("dispatch", "TASK-002", cwd=repo, env=env)

    assert r.code == 6
    assert 'codex: Error finding codex home: CODEX_HOME points to "~/.codex-x"' in r.stderr
    text = tasks_md.read_text()
    assert "Codex's stderr (last lines):" in text
    assert 'CODEX_HOME points to "~/.codex-x", but that path does not exist' in text
    assert "contract-secret-value-123" not in text + r.stderr
    assert home not in text


def test_codex_gets_the_committed_identity_in_its_environment(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    [call] = codex_runs(stubs)
    assert call["env"]["AGENTMEMORY_PROJECT_NAME"] == "github.com/ana/shop"
    assert call["env"]["PLAN_BUILD_MEMORY_MODE"] == "degraded"
    assert call["env"]["AGENTMEMORY_INJECT_CONTEXT"] == "false"


def test_an_inherited_identity_of_another_project_is_refused(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    before = tasks_md.read_bytes()

    r = cli(
        "dispatch",
        "TASK-002",
        cwd=repo,
        env={**DEGRADED, "AGENTMEMORY_PROJECT_NAME": "github.com/bob/other"},
    )

    assert r.code == 3
    assert "AGENTMEMORY_PROJECT_NAME is 'github.com/bob/other'" in r.stderr
    assert "'github.com/ana/shop'" in r.stderr
    assert tasks_md.read_bytes() == before
    assert codex_runs(stubs) == []


def test_two_attempts_that_change_nothing_stop_as_no_change(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {}, message="The pagination already exists; nothing to do.")

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert len(codex_runs(stubs)) == 2  # not three: two idle runs in a row say enough
    assert "Codex made no change; it said: “The pagination already exists" in r.stderr
    assert "Codex made no change in two attempts in a row" in r.stderr
    text = tasks_md.read_text()
    assert "Codex made no change; it said: “The pagination already exists; nothing to do.”" in text
    assert "revise the architecture" not in text


def test_the_in_progress_note_names_the_running_attempt(repo: Path, stubs: Stubs, cli: Any) -> None:
    tasks_md = make_plan(repo)
    seen = stubs.home / "tasks-during-attempt-2.md"
    codex_edits(stubs, {"src/app.py": "not yet\n"}, times=1)
    codex_edits(stubs, {"src/app.py": "fixed\n"}, message="done", run=["cp", "TASKS.md", str(seen)])
    rules = json.loads((stubs.home / "codex.json").read_text())
    (stubs.home / "codex.json").write_text(json.dumps([rules[1], rules[0], *rules[2:]]))

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "Outcome: In Progress · attempt 2 (corrector) running under pid" in seen.read_text()
    assert status_of(tasks_md, "TASK-002") == "Review"


def test_json_prints_the_interrupted_result(repo: Path, stubs: Stubs) -> None:
    make_plan(repo)
    stubs.rule("codex", {"match": ["exec"], "sleep": 60})
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002", "--json"],
        cwd=repo,
        env=dict(os.environ, **DEGRADED),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_until((stubs.home / "codex.pid").exists)
    time.sleep(0.3)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)

    assert child.returncode == 130, err
    result = json.loads(out)
    assert (result["status"], result["reason"]) == ("In Progress", "interrupted")
    assert result["attempts"][0]["attempt"] == 1


def test_evidence_has_repository_relative_paths_and_no_home(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    script = (
        "import os, sys; print(os.getcwd() + '/src/app.py:1: AssertionError'); "
        "print('cache at ' + os.environ['HOME'] + '/.cache/x'); sys.exit(1)"
    )
    tasks_md = make_plan(repo, verify=f"{sys.executable} -c {script!r}")
    codex_edits(stubs, {"src/app.py": "try\n"}, times=1)
    codex_edits(stubs, {"src/app.py": "again\n"}, times=1)
    codex_edits(stubs, {"src/app.py": "and again\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    text = tasks_md.read_text()
    assert "src/app.py:1: AssertionError" in text
    assert str(repo) not in text
    assert os.environ["HOME"] not in text
    assert "cache at ~/.cache/x" in text


def test_codexs_git_commands_are_named_in_the_evidence(repo: Path, stubs: Stubs, cli: Any) -> None:
    tasks_md = make_plan(repo)
    rows = [
        {"type": "thread.started", "thread_id": "t"},
        {
            "type": "item.completed",
            "item": {
                "type": "command_execution",
                "command": "/bin/bash -lc 'git add -A && git commit -m wip'",
                "aggregated_output": "fatal: Unable to create '.git/index.lock': Read-only",
                "exit_code": 128,
                "status": "failed",
            },
        },
        {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
        {"type": "turn.completed"},
    ]
    stream = "".join(json.dumps(x) + "\n" for x in rows)
    codex_edits(stubs, {"src/app.py": "fixed\n"}, stdout=stream)

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert (
        "Codex ran a git command the prompt forbids: "
        "`/bin/bash -lc 'git add -A && git commit -m wip' (failed)`"
    ) in tasks_md.read_text()


def test_an_ignored_tree_edit_shows_despite_a_forged_mtime(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    (repo / ".gitignore").write_text(".venv/\n")
    lib = repo / ".venv" / "lib"
    lib.mkdir(parents=True)
    (lib / "site.py").write_text("# original\n")
    (lib / "old.py").write_text("# to be removed\n")
    stamp = (lib / "site.py").stat().st_mtime_ns
    make_plan(repo)
    codex_edits(
        stubs,
        {"src/app.py": "fixed\n", ".venv/lib/site.py": "# patched!!\n"},
        message="done",
        delete=[".venv/lib/old.py"],
        run=["touch", "-d", "@" + str(stamp // 1_000_000_000), ".venv/lib/site.py"],
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "outside the scope: .venv/lib/site.py" in r.stderr
    assert (lib / "site.py").stat().st_mtime_ns // 1_000_000_000 == stamp // 1_000_000_000


def test_a_resume_also_checks_the_ignored_paths_the_stopped_run_touched(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    (repo / ".gitignore").write_text("local.env\nbuild/\n")
    (repo / "local.env").write_text("A=1\n")
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "write": {"local.env": "A=2\n", "build/late.sh": "echo\n"},
            "sleep": 60,
            "times": 1,
        },
    )
    child = start_dispatch(repo)
    assert wait_until((repo / "build" / "late.sh").exists)
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    assert "outside the scope: local.env" in r.stderr
    assert "outside the scope: build/late.sh" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Blocked"


def test_on_macos_the_fix_for_a_sandbox_that_cannot_start_is_seatbelt_s() -> None:
    fix = evidence.next_step("Blocked", "sandbox_unavailable", "TASK-002", platform="darwin")
    assert "Seatbelt (sandbox-exec) cannot start inside another sandbox" in fix
    assert "namespaces" not in fix
    assert fix.endswith("plan-build dispatch TASK-002 again")
