"""The `setup` step that starts AgentMemory in the background and waits for it to answer."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from plan_build.core import agentmemory as memory
from plan_build.core import proc
from plan_build.startup import sources
from plan_build.startup.setupstep import Planner, Result, Step, tail

MEMORY_WAIT = 90.0  # seconds for a started AgentMemory to answer livez (setup.memory_wait)


def state_dir(env: Mapping[str, str], home: Path) -> Path:
    base = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(base) / "plan-build"


def memory_steps(p: Planner) -> None:
    check = p.failed("memory.server")
    if check is None:
        return
    url = memory.base_url(p.env)
    start = f"AGENTMEMORY_SLOTS=true npx -y {sources.AGENTMEMORY_PACKAGE}"
    if check.cause == "slots_off":
        p.manual(
            check.id,
            f"turn on AgentMemory's memory slots (the server at {url} runs without them)",
            "set AGENTMEMORY_SLOTS=true in the server's environment (or in ~/.agentmemory/.env) "
            f"and restart it: agentmemory stop, then {start}",
        )
        return
    if check.cause != "unreachable":
        p.manual(check.id, check.detail, check.remediation or "see the report")
        return
    if not memory._is_loopback(url):
        p.manual(
            check.id,
            f"start AgentMemory at {url} (AGENTMEMORY_URL points off this machine)",
            f"on that machine: {start}",
        )
        return
    npx = proc.which("npx", p.env)
    if npx is None:
        p.manual(
            check.id,
            "start AgentMemory: npx is not on PATH",
            f"install Node.js with npm (https://nodejs.org), then: {start}",
        )
        return
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    argv = [npx, "-y", sources.AGENTMEMORY_PACKAGE]
    shown = start
    if port is not None and port != memory.DEFAULT_PORT:
        argv += ["--port", str(port)]
        shown += f" --port {port}"
    log_path = state_dir(p.env, p.session.home) / "agentmemory.log"
    wait = float(p.config.get("setup.memory_wait", MEMORY_WAIT)) if p.config else MEMORY_WAIT
    p.add(
        Step(
            id="memory.server",
            check=check.id,
            title=f"start AgentMemory in the background (slots on) and wait up to {wait:g}s "
            f"for {url}",
            command=shown,
            changes=(p.short(log_path) + " (its log)", "~/.agentmemory/ (its data)"),
            remedy=f"start it yourself to watch it: {start}; its log is {p.short(log_path)}",
            action=lambda: start_memory(p, argv, log_path, url, wait),
            verify=lambda: memory_problem(p),
        )
    )


def start_memory(p: Planner, argv: list[str], log_path: Path, url: str, wait: float) -> Result:
    env = {**p.env, "AGENTMEMORY_SLOTS": "true"}
    server = proc.spawn_detached(argv, env=env, cwd=p.session.home, log_path=log_path)
    try:
        return _wait_for_memory(p, server, log_path, url, wait)
    except BaseException:  # Ctrl-C while waiting: no half-started server is left behind
        server.stop()
        raise


def _wait_for_memory(
    p: Planner, server: proc.Detached, log_path: Path, url: str, wait: float
) -> Result:
    deadline = time.monotonic() + wait
    while True:
        live = memory.get(f"{url}/agentmemory/livez", None, timeout=2.0)
        if live.status == 200 and isinstance(live.body, dict) and live.body.get("status") == "ok":
            return Result(True, f"answering at {url} (pid {server.pid}, log {p.short(log_path)})")
        code = server.exited()
        if code is not None:
            return Result(False, f"it exited {code} before answering", _log_tail(log_path))
        if time.monotonic() >= deadline:
            server.stop()
            return Result(
                False,
                f"no answer from {url}/agentmemory/livez within {wait:g}s; it was stopped",
                _log_tail(log_path),
            )
        time.sleep(0.25)


def _log_tail(log_path: Path) -> tuple[str, ...]:
    try:
        return tail(log_path.read_text(encoding="utf-8", errors="replace")[-8192:])
    except OSError:
        return ()


def memory_problem(p: Planner) -> str | None:
    check = memory.check_server(p.env, p.session.home)
    return None if check.status in ("pass", "warn") else f"{check.detail} ({check.remediation})"
