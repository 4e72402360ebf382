"""AgentMemory health: each way the server can be unusable gets its own message."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from plan_build.core import agentmemory as memory
from tests.support.memserver import MemoryServer


def check(server: MemoryServer | None, home: Path, **env: str):
    base = {"AGENTMEMORY_URL": server.url} if server else {}
    return memory.check_server({**base, **env}, home)


def test_healthy_server_with_slots_passes(memory_server: MemoryServer, tmp_path: Path) -> None:
    c = check(memory_server, tmp_path)
    assert (c.id, c.status, c.degradable) == ("memory.server", "pass", True)
    assert c.detail == f"healthy at {memory_server.url} (0.9.29)"


def test_refused_connection(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = memory.check_server({"AGENTMEMORY_URL": f"http://127.0.0.1:{port}"}, tmp_path)
    assert c.status == "fail"
    assert "no AgentMemory server answers" in c.detail
    assert "agentmemory status" in (c.remediation or "")


def test_garbage_is_not_mistaken_for_agentmemory(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    memory_server.state.raw = b"<html>hello</html>"
    c = check(memory_server, tmp_path)
    assert c.status == "fail"
    assert "no AgentMemory status" in c.detail


def test_wrong_or_missing_secret_is_unauthorized(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    memory_server.state.secret = "right"
    c = check(memory_server, tmp_path)
    assert c.status == "fail"
    assert "unauthorized (no secret was found)" in c.detail
    assert "AGENTMEMORY_SECRET" in (c.remediation or "")
    c = check(memory_server, tmp_path, AGENTMEMORY_SECRET="wrong")
    assert "the secret was not accepted" in c.detail
    assert "wrong" not in c.detail + (c.remediation or "")
    assert check(memory_server, tmp_path, AGENTMEMORY_SECRET="right").status == "pass"


def test_secret_files_are_read_for_loopback(memory_server: MemoryServer, tmp_path: Path) -> None:
    memory_server.state.secret = "from-file"
    (tmp_path / ".agentmemory").mkdir()
    (tmp_path / ".agentmemory" / "secret").write_text("from-file\n")
    assert check(memory_server, tmp_path).status == "pass"
    (tmp_path / ".agentmemory" / ".env").write_text("export AGENTMEMORY_SECRET='from-file'\n")
    (tmp_path / ".agentmemory" / "secret").write_text("stale\n")
    assert check(memory_server, tmp_path).status == "pass"
    assert ("/agentmemory/slots", "Bearer from-file") in memory_server.state.requests


def test_file_secrets_never_go_to_a_remote_url(tmp_path: Path) -> None:
    (tmp_path / ".agentmemory").mkdir()
    (tmp_path / ".agentmemory" / "secret").write_text("local-only\n")
    assert memory.resolve_secret({}, tmp_path, "https://memory.example.com") is None
    assert memory.resolve_secret({}, tmp_path, "http://127.0.0.1:3111") == "local-only"


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (503, {"status": "critical", "version": "0.9.29"}, "reports status critical"),
        (200, {"status": "bogus"}, "unknown status 'bogus'"),
        (200, "not json", "no JSON"),
    ],
)
def test_unhealthy_servers_fail(
    memory_server: MemoryServer, tmp_path: Path, status, body, words
) -> None:
    memory_server.state.health_status = status
    memory_server.state.health_body = body.encode() if isinstance(body, str) else body
    c = check(memory_server, tmp_path)
    assert c.status == "fail"
    assert words in c.detail


def test_degraded_server_warns_but_is_usable(memory_server: MemoryServer, tmp_path: Path) -> None:
    memory_server.state.health_body = {"status": "degraded", "version": "0.9.30"}
    c = check(memory_server, tmp_path)
    assert c.status == "warn"
    assert "running degraded" in c.detail


def test_disabled_slots_fail_with_the_setting_to_change(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    memory_server.state.slots_enabled = False
    c = check(memory_server, tmp_path)
    assert c.status == "fail"
    assert "slots are disabled" in c.detail
    assert "AGENTMEMORY_SLOTS=true" in (c.remediation or "")
