"""AgentMemory server health, read over its REST API (never from `agentmemory status`, whose
exit code is 0 even when the server is degraded).

livez (no auth) proves something is listening and is AgentMemory; health (bearer secret)
proves it is usable; the slot list proves slots are enabled (the workflow_status checkpoint
needs them). The secret is sent only as a header, and the secrets from files only to loopback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from plan_build.core import sessionvars
from plan_build.core.checks import Check

DEFAULT_PORT = 3111
TIMEOUT = 3.0
START_HINT = (
    "start it (npx @agentmemory/agentmemory, or: agentmemory) and check: agentmemory status"
)


def base_url(env: Mapping[str, str]) -> str:
    url = env.get("AGENTMEMORY_URL")
    if url:
        return url.rstrip("/")
    return f"http://localhost:{env.get('III_REST_PORT') or DEFAULT_PORT}"


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in {"localhost", "::1"} or host.startswith("127.")


def _read_env_file(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and key.strip() == "AGENTMEMORY_SECRET":
            return value.strip().strip("'\"") or None
    return None


def resolve_secret(env: Mapping[str, str], home: Path, url: str) -> str | None:
    """AGENTMEMORY_SECRET, else ~/.agentmemory/.env, else ~/.agentmemory/secret (loopback only)."""
    if env.get("AGENTMEMORY_SECRET"):
        return env["AGENTMEMORY_SECRET"]
    if not _is_loopback(url):
        return None
    from_env_file = _read_env_file(home / ".agentmemory" / ".env")
    if from_env_file:
        return from_env_file
    try:
        secret = (home / ".agentmemory" / "secret").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return secret or None


@dataclass(frozen=True)
class Reply:
    status: int | None  # None: no HTTP answer at all
    body: Any  # parsed JSON, or None when not JSON
    error: str | None = None


def get(url: str, secret: str | None, timeout: float = TIMEOUT) -> Reply:
    import urllib.error
    import urllib.request

    headers = {"Accept": "application/json"}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - http(s) only, checked
    if urlsplit(url).scheme not in {"http", "https"}:
        return Reply(None, None, f"unsupported URL scheme in {url}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310
            status, raw = resp.status, resp.read(1 << 20)
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read(1 << 20)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Reply(None, None, str(reason))
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        body = None
    return Reply(status, body)


def check_server(env: Mapping[str, str], home: Path) -> Check:
    """One `memory.server` row: reachable, AgentMemory, authorised, healthy, slots enabled."""
    url = base_url(env)

    def fail(detail: str, fix: str, cause: str | None = None) -> Check:
        return Check("memory.server", "fail", detail, fix, degradable=True, cause=cause)

    secret = resolve_secret(env, home, url)
    live, health, slots = _fetch_all(url, secret)
    if live.status is None:
        return fail(
            f"no AgentMemory server answers at {url} ({live.error})", START_HINT, "unreachable"
        )
    if live.status != 200 or not isinstance(live.body, dict):
        return fail(
            f"{url} answered livez with HTTP {live.status} and no AgentMemory status",
            f"check that AGENTMEMORY_URL ({url}) points at AgentMemory; {START_HINT}",
        )
    if live.body.get("status") != "ok" or live.body.get("service") not in (None, "agentmemory"):
        return fail(
            f"{url} is not a ready AgentMemory server (livez said {_short(live.body)})",
            f"check AGENTMEMORY_URL; {START_HINT}",
        )
    if health.status == 401:
        return fail(
            f"AgentMemory at {url} rejected the request as unauthorized"
            + (" (the secret was not accepted)" if secret else " (no secret was found)"),
            "set AGENTMEMORY_SECRET to the server's secret (see ~/.agentmemory/secret)",
            "unauthorized",
        )
    body = health.body if isinstance(health.body, dict) else None
    if health.status is None or body is None:
        return fail(
            f"AgentMemory at {url} answered health with "
            + (f"HTTP {health.status} and no JSON" if health.status else str(health.error)),
            f"restart AgentMemory; {START_HINT}",
        )
    state = str(body.get("status") or "unknown")
    version = str(body.get("version") or "unknown version")
    if health.status == 503 or state == "critical":
        return fail(
            f"AgentMemory at {url} reports status {state} ({version})",
            "check the server's log, then restart it (agentmemory stop; agentmemory)",
        )
    if state not in {"healthy", "degraded"}:
        return fail(
            f"AgentMemory at {url} reports an unknown status {state!r} ({version})",
            "restart AgentMemory or upgrade it: npm install -g @agentmemory/agentmemory",
        )
    if slots.status == 503:
        return fail(
            f"AgentMemory at {url} is {state} but memory slots are disabled",
            "restart the server with AGENTMEMORY_SLOTS=true (the workflow_status slot needs it)",
            "slots_off",
        )
    if slots.status != 200:
        return fail(
            f"AgentMemory at {url} did not list slots (HTTP {slots.status or slots.error})",
            "upgrade AgentMemory to a version with slots and set AGENTMEMORY_SLOTS=true",
        )
    detail = f"{state} at {url} ({version})"
    if state == "degraded":
        return Check("memory.server", "warn", detail + ", running degraded", None, degradable=True)
    return Check("memory.server", "pass", detail, None, degradable=True)


def _fetch_all(url: str, secret: str | None) -> tuple[Reply, Reply, Reply]:
    """livez, health and the slot list, requested at the same time and read in that order
    (a slow server costs one round trip, not three)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=3) as pool:
        live = pool.submit(get, f"{url}/agentmemory/livez", None)
        health = pool.submit(get, f"{url}/agentmemory/health", secret)
        slots = pool.submit(get, f"{url}/agentmemory/slots", secret)
        return live.result(), health.result(), slots.result()


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["base_url", "check_server", "get", "resolve_secret"]


def memory_env(value: str, *, degraded: bool) -> dict[str, str]:
    """What Claude (and the Codex processes it starts) must see for one memory scope."""
    return {
        "AGENTMEMORY_PROJECT_NAME": value,
        "AGENTMEMORY_INJECT_CONTEXT": "false" if degraded else "true",
        sessionvars.MEMORY_MODE: "degraded" if degraded else "required",
    }
