"""How a session was guarded: the record the launch writes under the git dir (ADR 0190).

`plan` and `architect` write it before Claude starts, outside any sandbox, under the common git
dir (`plan-build/guards/<session>.json`), which no sandboxed process can write. So the one way
a session runs without the sandbox — a person typing the words at the launch — cannot be
produced by an agent, and checks read it (never an environment variable) to decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from plan_build.core import clock, fsutil

if TYPE_CHECKING:
    from plan_build.core.sandbox import Policy

Mode = Literal["sandbox", "unguarded"]
GUARD_DIR = "guards"
# the confirmation a person types to launch without the sandbox (interact asks for it)
UNGUARDED_WORDS = "run unguarded"


@dataclass(frozen=True)
class Guard:
    mode: Mode
    session: str
    chosen_at: str
    how: str  # "sandbox active: bubblewrap …" or how the person asked for unguarded
    policy: str | None = None  # the policy's digest (sandbox mode)


def guard_path(state_dir: Path, session_id: str) -> Path:
    return state_dir / GUARD_DIR / f"{session_id}.json"


def record_guard(state_dir: Path, guard: Guard) -> None:
    """Written by the launch, outside any sandbox, under the common git dir: no sandboxed
    process can write it, so an unguarded mode can only come from the person at the launch."""
    path = guard_path(state_dir, guard.session)
    path.parent.mkdir(parents=True, exist_ok=True)
    fsutil.write_json(path, {"format": 1, **asdict(guard)}, sort_keys=True)


def read_guard(state_dir: Path, session_id: str | None) -> Guard | None:
    """The session's guard record; None when there is none (not launched here, or an id that
    is not a session id) or it cannot be read."""
    if not session_id:
        return None
    try:
        data = fsutil.read_json(guard_path(state_dir, session_id))
    except (OSError, fsutil.StateFileError):
        return None
    if not isinstance(data, dict) or data.get("mode") not in ("sandbox", "unguarded"):
        return None
    return Guard(
        mode=data["mode"],
        session=str(data.get("session") or session_id),
        chosen_at=str(data.get("chosen_at") or ""),
        how=str(data.get("how") or ""),
        policy=data.get("policy") if isinstance(data.get("policy"), str) else None,
    )


def unguarded_session(state_dir: Path, env: Mapping[str, str]) -> Guard | None:
    """The session's guard record when a person launched it unguarded; None otherwise (the
    default: everything runs under the policy)."""
    from plan_build.core import sessionvars

    guard = read_guard(state_dir, sessionvars.session_of(env))
    return guard if guard is not None and guard.mode == "unguarded" else None


def new_guard(session_id: str, mode: Mode, how: str, policy: Policy | None) -> Guard:
    return Guard(mode, session_id, clock.stamp(), how, policy.digest() if policy else None)


__all__ = [
    "UNGUARDED_WORDS",
    "Guard",
    "new_guard",
    "read_guard",
    "record_guard",
    "unguarded_session",
]
