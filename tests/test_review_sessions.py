"""Which Claude Code session plan-build runs in: real processes stand in for Claude, with
session files under the temporary HOME; the parent chain is given explicitly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_build.core import claudesessions as sessions
from plan_build.core.claudesessions import SessionError, process_start, read_session_file, resolve

SID_A = "1dae44f1-1219-4786-b81f-7c23a218c0ac"
SID_B = "2bbe44f1-1219-4786-b81f-7c23a218c0ad"


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Long-lived processes that play Claude Code."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def spawn(procs: list[subprocess.Popen[bytes]]) -> int:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    procs.append(p)
    return p.pid


def write_session(home: Path, pid: int, sid: str, **extra: object) -> Path:
    path = home / ".claude" / "sessions" / f"{pid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    info: dict[str, object] = {
        "pid": pid,
        "sessionId": sid,
        "cwd": "/home/ana/src/shop",
        "startedAt": int(time.time() * 1000),
        "procStart": process_start(pid),
        "kind": "interactive",
        "entrypoint": "cli",
    }
    info.update(extra)
    path.write_text(json.dumps({k: v for k, v in info.items() if v is not None}))
    return path


def env(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), **extra}


def test_no_session_files_means_no_session(private_home: Path, procs: list) -> None:
    pid = spawn(procs)
    assert resolve(env(private_home), parents=lambda: [pid]) is None


def test_the_nearest_live_ancestor_with_a_session_file_wins(
    private_home: Path, procs: list
) -> None:
    shell, claude, outer = spawn(procs), spawn(procs), spawn(procs)
    write_session(private_home, claude, SID_A)
    write_session(private_home, outer, SID_B)
    s = resolve(env(private_home), parents=lambda: [shell, claude, outer])
    assert s is not None
    assert (s.pid, s.session_id, s.cwd, s.source) == (
        claude,
        SID_A,
        "/home/ana/src/shop",
        "process tree",
    )


def test_a_file_left_behind_by_a_killed_session_is_ignored(private_home: Path, procs: list) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    write_session(private_home, dead.pid, SID_A, procStart="1")
    dead.wait()
    live = spawn(procs)
    write_session(private_home, live, SID_B)
    s = resolve(env(private_home), parents=lambda: [dead.pid, live])
    assert s is not None
    assert s.session_id == SID_B


def test_a_reused_pid_does_not_count(private_home: Path, procs: list) -> None:
    pid = spawn(procs)
    write_session(private_home, pid, SID_A, procStart="12345")
    assert resolve(env(private_home), parents=lambda: [pid]) is None


def test_a_reused_pid_is_caught_by_start_time_without_proc_start(
    private_home: Path, procs: list
) -> None:
    pid = spawn(procs)
    write_session(private_home, pid, SID_A, procStart=None, startedAt=1_000_000_000_000)
    assert resolve(env(private_home), parents=lambda: [pid]) is None


def test_print_mode_sessions_do_not_count(private_home: Path, procs: list) -> None:
    pid = spawn(procs)
    write_session(private_home, pid, SID_A, entrypoint="sdk-cli")
    assert resolve(env(private_home), parents=lambda: [pid]) is None


def test_a_nul_padded_comma_truncated_file_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "42.json"
    path.write_bytes(b'{"pid":42,"sessionId":"' + SID_A.encode() + b'",\n\x00\x00\x00garbage')
    assert read_session_file(path) == {"pid": 42, "sessionId": SID_A}


def test_a_pid_hint_must_resolve(private_home: Path, procs: list) -> None:
    pid = spawn(procs)
    with pytest.raises(SessionError, match=f"{pid}.json does not exist"):
        resolve(env(private_home, PLAN_BUILD_CLAUDE_PID=str(pid)), parents=lambda: [])
    write_session(private_home, pid, SID_A)
    s = resolve(env(private_home, PLAN_BUILD_CLAUDE_PID=str(pid)), parents=lambda: [])
    assert s is not None
    assert (s.session_id, s.source) == (SID_A, "PLAN_BUILD_CLAUDE_PID")
    with pytest.raises(SessionError, match=f"but CLAUDE_CODE_SESSION_ID says {SID_B}"):
        resolve(
            env(private_home, PLAN_BUILD_CLAUDE_PID=str(pid), CLAUDE_CODE_SESSION_ID=SID_B),
            parents=lambda: [],
        )
    with pytest.raises(SessionError, match="is not a process id"):
        resolve(env(private_home, PLAN_BUILD_CLAUDE_PID="-3"), parents=lambda: [])


def test_claude_codes_session_id_variable_must_match(private_home: Path, procs: list) -> None:
    claude = spawn(procs)
    write_session(private_home, claude, SID_A)
    s = resolve(env(private_home, CLAUDE_CODE_SESSION_ID=SID_A), parents=lambda: [claude])
    assert s is not None
    assert s.source == "CLAUDE_CODE_SESSION_ID"
    with pytest.raises(SessionError) as err:
        resolve(env(private_home, CLAUDE_CODE_SESSION_ID=SID_B), parents=lambda: [claude])
    assert f"this process runs under Claude Code pid {claude}" in err.value.what
    assert "unset CLAUDE_CODE_SESSION_ID" in (err.value.fix or "")
    assert "/clear" not in (err.value.fix or "")  # 2.1.332 moves both ids on /clear


def test_a_session_id_hint_outside_the_tree_is_found_by_scanning(
    private_home: Path, procs: list
) -> None:
    claude = spawn(procs)
    write_session(private_home, claude, SID_A)
    s = resolve(env(private_home, CLAUDE_CODE_SESSION_ID=SID_A), parents=lambda: [])
    assert s is not None
    assert s.pid == claude
    with pytest.raises(SessionError, match="names no running interactive Claude Code session"):
        resolve(env(private_home, CLAUDE_CODE_SESSION_ID=SID_B), parents=lambda: [])


def test_a_malformed_session_id_variable_is_ignored(private_home: Path) -> None:
    assert (
        resolve(env(private_home, CLAUDE_CODE_SESSION_ID="not-an-id"), parents=lambda: []) is None
    )


def test_the_real_parent_chain_reaches_this_test_process(private_home: Path) -> None:
    code = (
        "from plan_build.core.claudesessions import ancestors; import os; "
        f"print({os.getpid()} in ancestors())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    assert sessions.process_start(os.getpid()) is not None
