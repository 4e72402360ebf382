"""Which Claude Code session this process runs in.

Claude Code writes `~/.claude/sessions/<pid>.json` for each interactive session (`sessionId`,
`cwd`, `procStart`, `entrypoint`). The file survives a SIGKILL, so a file only counts when its
pid is alive, is the same process (`procStart` matches the process's start time, which
guards against pid reuse) and is an interactive session (`entrypoint` "cli"; print mode
writes "sdk-cli").

Without hints plan-build walks its own parent-process chain and takes the first ancestor with
such a file; finding none means "no session", which is not an error. Explicit hints - the
`CLAUDE_CODE_SESSION_ID` Claude Code exports to its Bash tool, or `PLAN_BUILD_CLAUDE_PID` -
must resolve to a live session, or resolution fails closed: plan-build never falls back to
another session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.proctree import ancestors, create_time, pid_alive, process_start

ID_HINT = "CLAUDE_CODE_SESSION_ID"
PID_HINT = "PLAN_BUILD_CLAUDE_PID"
ID_SHAPE = re.compile(r"^[0-9A-Fa-f-]{36}$")
START_SLACK = 2.0  # seconds between a process starting and it recording startedAt


@dataclass(frozen=True)
class ClaudeSession:
    pid: int
    session_id: str
    cwd: str
    file: Path
    source: str  # how it was found: "process tree", ID_HINT or PID_HINT
    proc_start: str | None = None  # the live process's start time (/proc), when known


class SessionError(PlanBuildError):
    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(
            what,
            fix
            or "run plan-build from the Claude Code session that owns the work, "
            "or name the workflow with --workflow ID",
            code=ExitCode.PREFLIGHT,
        )


def claude_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    return Path(env.get("HOME") or Path.home()) / ".claude"


def sessions_dir(env: Mapping[str, str]) -> Path:
    return claude_dir(env) / "sessions"


def read_session_file(path: Path) -> dict[str, Any]:
    """The JSON of a session file, cut at the first NUL and repaired if it was truncated
    after a comma (Claude Code pads and rewrites the file in place)."""
    raw = path.read_bytes().split(b"\0", 1)[0]
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        raise ValueError("empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        repaired = text.rstrip().rstrip(",").rstrip()
        if not repaired.endswith("}"):
            repaired += "}"
        data = json.loads(repaired)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def why_not_live(info: Mapping[str, Any], pid: int) -> str | None:
    """Why the session file of `pid` does not describe a running interactive session."""
    if not pid_alive(pid):
        return f"process {pid} is not running (the file outlived a killed session)"
    entry = info.get("entrypoint")
    if entry is not None and entry != "cli":
        return f"process {pid} is not an interactive session (entrypoint {entry!r})"
    recorded = info.get("procStart")
    if recorded is not None:
        actual = process_start(pid)
        if actual is not None:
            if str(recorded) != actual:
                return f"process {pid} is a different process now (pid reused)"
            return None
    started = info.get("startedAt")
    if isinstance(started, int | float):
        began = create_time(pid)
        if began is not None and started / 1000.0 < began - START_SLACK:
            return f"process {pid} is a different process now (pid reused)"
    return None


def _from_file(path: Path, pid: int, source: str) -> tuple[ClaudeSession | None, str]:
    try:
        info = read_session_file(path)
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except (OSError, ValueError) as exc:
        return None, f"{path} is unreadable ({exc})"
    recorded_pid = info.get("pid", pid)
    if recorded_pid != pid:
        return None, f"{path} names pid {recorded_pid}"
    session_id = info.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return None, f"{path} has no sessionId"
    reason = why_not_live(info, pid)
    if reason:
        return None, reason
    cwd = info.get("cwd")
    where = cwd if isinstance(cwd, str) else ""
    return ClaudeSession(pid, session_id, where, path, source, process_start(pid)), ""


def live_file(directory: Path, pid: int) -> bool:
    """Whether `directory/<pid>.json` describes the running interactive session `pid`."""
    session, _ = _from_file(directory / f"{pid}.json", pid, "process tree")
    return session is not None


def _numbered_files(directory: Path) -> list[tuple[int, Path]]:
    if not directory.is_dir():
        return []
    out = []
    for path in directory.glob("*.json"):
        if path.stem.isdigit():
            out.append((int(path.stem), path))
    return sorted(out)


def _by_pid(directory: Path, pid_hint: str, id_hint: str) -> ClaudeSession:
    if not pid_hint.isdigit() or int(pid_hint) <= 0:
        raise SessionError(f"{PID_HINT}={pid_hint!r} is not a process id")
    pid = int(pid_hint)
    session, why = _from_file(directory / f"{pid}.json", pid, PID_HINT)
    if session is None:
        raise SessionError(f"cannot resolve the Claude Code session from {PID_HINT}: {why}")
    if id_hint and session.session_id != id_hint:
        raise SessionError(
            f"{PID_HINT}={pid} is session {session.session_id}, but {ID_HINT} says {id_hint}"
        )
    return session


def _by_id(directory: Path, id_hint: str, tree: ClaudeSession | None) -> ClaudeSession:
    if tree is not None and tree.session_id == id_hint:
        return ClaudeSession(
            tree.pid, tree.session_id, tree.cwd, tree.file, ID_HINT, tree.proc_start
        )
    if tree is not None:
        # claude 2.1.332 changes both to the new id on /clear, so they disagree only when the
        # variable was inherited from another session (a nested shell, a copied environment)
        raise SessionError(
            f"{ID_HINT} is {id_hint}, but this process runs under Claude Code pid {tree.pid} "
            f"whose session file says {tree.session_id}",
            f"the variable comes from another session: unset {ID_HINT} (the process tree "
            "finds the session), or name the workflow with --workflow ID",
        )
    matches = []
    for pid, path in _numbered_files(directory):
        session, _ = _from_file(path, pid, ID_HINT)
        if session is not None and session.session_id == id_hint:
            matches.append(session)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionError(f"{ID_HINT}={id_hint} names no running interactive Claude Code session")
    pids = ", ".join(str(s.pid) for s in matches)
    raise SessionError(f"{ID_HINT}={id_hint} is claimed by several processes ({pids})")


def resolve(
    env: Mapping[str, str], *, parents: Callable[[], list[int]] = ancestors
) -> ClaudeSession | None:
    """The current Claude Code session, None when there is none, SessionError when an
    explicit hint does not resolve."""
    directory = sessions_dir(env)
    pid_hint = (env.get(PID_HINT) or "").strip()
    id_hint = (env.get(ID_HINT) or "").strip()
    if id_hint and not ID_SHAPE.match(id_hint):
        id_hint = ""  # not a session id: ignore it, as codex-review does
    if pid_hint:
        return _by_pid(directory, pid_hint, id_hint)
    tree: ClaudeSession | None = None
    for pid in parents():
        session, _ = _from_file(directory / f"{pid}.json", pid, "process tree")
        if session is not None:
            tree = session
            break
    if not id_hint:
        return tree
    return _by_id(directory, id_hint, tree)


def live_session_ids(env: Mapping[str, str]) -> set[str]:
    """The ids of every running interactive session (to tell ended owners from live ones)."""
    out: set[str] = set()
    for pid, path in _numbered_files(sessions_dir(env)):
        session, _ = _from_file(path, pid, "scan")
        if session is not None:
            out.add(session.session_id)
    return out


__all__ = [
    "ID_HINT",
    "PID_HINT",
    "ClaudeSession",
    "SessionError",
    "ancestors",
    "claude_dir",
    "create_time",
    "live_file",
    "live_session_ids",
    "pid_alive",
    "process_start",
    "read_session_file",
    "resolve",
    "sessions_dir",
    "why_not_live",
]
