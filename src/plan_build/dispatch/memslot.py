"""Read the `workflow_status` checkpoint slot from AgentMemory for a Codex prompt.

Built on `memory` (URL, secret resolution with file secrets only for loopback, one short GET).
Never raises: the caller gets the content, or the reason there is none. The secret only ever
travels in the Authorization header.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from plan_build.core import agentmemory as memory

TIMEOUT = 3.0


@dataclass(frozen=True)
class SlotRead:
    state: str  # "present", "absent", "unavailable" (reason says why) or "foreign" (reason
    # names the project the checkpoint belongs to)
    content: str | None = None
    reason: str | None = None


def read_slot(label: str, env: Mapping[str, str], home: Path, timeout: float = TIMEOUT) -> SlotRead:
    base = memory.base_url(env)
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        return SlotRead("unavailable", reason=f"AGENTMEMORY_URL {base!r} is not an http(s) URL")
    query = urllib.parse.urlencode({"label": label})
    reply = memory.get(
        f"{base}/agentmemory/slot?{query}", memory.resolve_secret(env, home, base), timeout
    )
    if reply.status is None:
        return SlotRead("unavailable", reason=f"cannot reach {base}: {reply.error}")
    if reply.status == 404:
        return SlotRead("absent")
    if reply.status != 200:
        why = {401: "unauthorized (check AGENTMEMORY_SECRET)", 503: "slots are not enabled"}
        return SlotRead("unavailable", reason=f"HTTP {reply.status}: {why.get(reply.status, '')}")
    if reply.body is None:
        return SlotRead("unavailable", reason="the server's answer is not JSON")
    content = _content(reply.body)
    if content is None:
        if isinstance(reply.body, dict) and reply.body.get("success") is False:
            return SlotRead("absent")
        return SlotRead("unavailable", reason="the answer has no slot content")
    return SlotRead("present", content=content)


def named_project(content: str) -> str | None:
    """The project a checkpoint names on its `Project:` line (the skills write it first)."""
    for line in content.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "project" and value.strip():
            return value.strip().strip("`")
    return None


def _content(body: object) -> str | None:
    if not isinstance(body, dict):
        return None
    for holder in (body.get("slot"), body.get("data"), body):
        if isinstance(holder, dict) and isinstance(holder.get("content"), str):
            return str(holder["content"])
    return None
