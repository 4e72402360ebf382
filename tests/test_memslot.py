"""Reading the workflow_status checkpoint from AgentMemory: content, or why there is none."""

from __future__ import annotations

import socket
from pathlib import Path

from plan_build.core import agentmemory as memory
from plan_build.dispatch import memslot
from tests.support.memserver import MemoryServer


def env_for(server: MemoryServer, **extra: str) -> dict[str, str]:
    return {"AGENTMEMORY_URL": server.url, **extra}


def test_a_present_slot_is_read_with_the_env_secret(
    memory_server: MemoryServer, private_home: Path
) -> None:
    memory_server.state.secret = "env-secret-123"
    memory_server.state.slots["workflow_status"] = "Phase: execution"
    got = memslot.read_slot(
        "workflow_status", env_for(memory_server, AGENTMEMORY_SECRET="env-secret-123"), private_home
    )
    assert got == memslot.SlotRead("present", content="Phase: execution")
    assert memory_server.state.requests[-1] == (
        "/agentmemory/slot?label=workflow_status",
        "Bearer env-secret-123",
    )


def test_the_secret_files_are_used_for_a_loopback_server(
    memory_server: MemoryServer, private_home: Path
) -> None:
    memory_server.state.secret = "from-file-456"
    memory_server.state.slots["workflow_status"] = "x"
    (private_home / ".agentmemory").mkdir()
    (private_home / ".agentmemory" / "secret").write_text("from-file-456\n")
    assert memslot.read_slot("workflow_status", env_for(memory_server), private_home).state == (
        "present"
    )
    (private_home / ".agentmemory" / ".env").write_text("# comment\nAGENTMEMORY_SECRET='other'\n")
    got = memslot.read_slot("workflow_status", env_for(memory_server), private_home)
    assert got.state == "unavailable"  # .env wins over secret, and it is wrong here
    assert got.reason == "HTTP 401: unauthorized (check AGENTMEMORY_SECRET)"


def test_file_secrets_are_never_sent_to_a_remote_url(private_home: Path) -> None:
    (private_home / ".agentmemory").mkdir()
    (private_home / ".agentmemory" / "secret").write_text("local-only")
    assert memory.resolve_secret({}, private_home, "https://memory.example.com") is None
    assert memory.resolve_secret({}, private_home, "http://127.0.0.1:3111") == "local-only"


def test_an_absent_slot(memory_server: MemoryServer, private_home: Path) -> None:
    got = memslot.read_slot("workflow_status", env_for(memory_server), private_home)
    assert got == memslot.SlotRead("absent")


def test_slots_disabled_on_the_server(memory_server: MemoryServer, private_home: Path) -> None:
    memory_server.state.slots_enabled = False
    got = memslot.read_slot("workflow_status", env_for(memory_server), private_home)
    assert got.state == "unavailable"
    assert got.reason == "HTTP 503: slots are not enabled"


def test_garbage_from_the_server(memory_server: MemoryServer, private_home: Path) -> None:
    memory_server.state.raw = b"<html>nope</html>"
    got = memslot.read_slot("workflow_status", env_for(memory_server), private_home)
    assert got == memslot.SlotRead("unavailable", reason="the server's answer is not JSON")


def test_no_server_listening(private_home: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = memslot.read_slot(
        "workflow_status", {"AGENTMEMORY_URL": f"http://127.0.0.1:{port}"}, private_home
    )
    assert got.state == "unavailable"
    assert got.reason is not None
    assert got.reason.startswith(f"cannot reach http://127.0.0.1:{port}")


def test_a_non_http_url_is_not_opened(private_home: Path) -> None:
    got = memslot.read_slot("workflow_status", {"AGENTMEMORY_URL": "file:///etc"}, private_home)
    assert got.state == "unavailable"
    assert "is not an http(s) URL" in (got.reason or "")


def test_the_project_a_checkpoint_names() -> None:
    assert memslot.named_project("Project: github.com/ana/shop\nPhase: x") == "github.com/ana/shop"
    assert memslot.named_project("phase: x\nproject: `local/1234`") == "local/1234"
    assert memslot.named_project("Phase: x") is None
