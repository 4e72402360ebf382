"""Read one AgentMemory slot (the `workflow_status` checkpoint) over loopback HTTP.

A short timeout, the bearer secret resolved the way AgentMemory's own clients do
(AGENTMEMORY_SECRET, then ~/.agentmemory/.env, then ~/.agentmemory/secret; the two files only
for loopback URLs), and never an exception: the caller gets the content or the reason there
is none. The secret is only ever put in the Authorization header.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://localhost:3111"
TIMEOUT = 3.0
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class SlotRead:
    state: str  # "present", "absent", "unavailable" (reason says why) or "foreign" (reason
    # names the project the checkpoint belongs to)
    content: str | None = None
    reason: str | None = None


def base_url(env: Mapping[str, str]) -> str:
    return (env.get("AGENTMEMORY_URL") or DEFAULT_URL).rstrip("/")


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _from_env_file(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and key.strip() == "AGENTMEMORY_SECRET":
            return value.strip().strip("'\"") or None
    return None


def secret(env: Mapping[str, str], home: Path, url: str) -> str | None:
    """The bearer secret for `url`, or None when none is configured."""
    value = env.get("AGENTMEMORY_SECRET")
    if value:
        return value
    if not _is_loopback(url):
        return None
    value = _from_env_file(home / ".agentmemory" / ".env")
    if value:
        return value
    try:
        return (home / ".agentmemory" / "secret").read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def read_slot(label: str, env: Mapping[str, str], home: Path, timeout: float = TIMEOUT) -> SlotRead:
    url = base_url(env)
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return SlotRead("unavailable", reason=f"AGENTMEMORY_URL {url!r} is not an http(s) URL")
    query = urllib.parse.urlencode({"label": label})
    # the scheme was checked above: http(s) only
    request = urllib.request.Request(f"{url}/agentmemory/slot?{query}", method="GET")  # noqa: S310
    token = secret(env, home, url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            raw = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return SlotRead("absent")
        why = {401: "unauthorized (check AGENTMEMORY_SECRET)", 503: "slots are not enabled"}
        return SlotRead("unavailable", reason=f"HTTP {exc.code}: {why.get(exc.code, exc.reason)}")
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return SlotRead("unavailable", reason=f"cannot reach {url}: {reason}")
    if len(raw) > MAX_BYTES:
        return SlotRead("unavailable", reason="the slot answer is larger than 64 KiB")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return SlotRead("unavailable", reason="the server's answer is not JSON")
    content = _content(body)
    if content is None:
        if isinstance(body, dict) and body.get("success") is False:
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
