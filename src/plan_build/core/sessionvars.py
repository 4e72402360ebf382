"""The variables a launch puts into a session's environment, and the session id's grammar.

One home for each (ADR 0186). A launch (`startup.chain`) gives Claude, and so every Codex and
plan-build it starts, the session's id, the memory mode it settled on and the release it runs
from; the readers (`baseline.current`, dispatch's telemetry and memory scope, `env`, the
views, the release resolution) ask here for the names, and for what a session id may be.
Stdlib only, so the core leaf `runrelease` may use it too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SESSION = "PLAN_BUILD_SESSION"  # the session's id (the baseline's `refs/plan-build/sessions/<id>`)
MEMORY_MODE = "PLAN_BUILD_MEMORY_MODE"  # "required" or "degraded", as preflight settled it
RELEASE = "PLAN_BUILD_RELEASE"  # the release directory the session's plan-build runs from
HOOK = "PLAN_BUILD_HOOK"  # the command Claude Code's hooks run (settings name only the variable)
BROKER = "PLAN_BUILD_BROKER"  # the session broker's spool: plan-build inside forwards to it
BROKERED = "PLAN_BUILD_BROKERED"  # set by the broker in each run it starts (an agent's request)
# "sandbox" or "unguarded": shown to the session's programs; what holds is the guard record
# under the git dir (core/sandbox.py), never this variable
GUARD = "PLAN_BUILD_GUARD"
MEMORY_MODES = ("required", "degraded")

# A session id names a git ref and a folder: letters, digits, '-', '_' and single dots, not
# starting with a dot or a dash, not ending in `.lock` (git's rule), at most 64 characters.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$")
MAX_ID_LENGTH = 64


def is_session_id(value: str) -> bool:
    return (
        bool(value)
        and len(value) <= MAX_ID_LENGTH
        and ID_PATTERN.match(value) is not None
        and not value.endswith(".lock")
    )


def session_of(env: Mapping[str, str]) -> str | None:
    """The session id the environment names; None when unset, blank or not a session id."""
    sid = env.get(SESSION, "").strip()
    return sid if is_session_id(sid) else None


__all__ = [
    "BROKER",
    "BROKERED",
    "GUARD",
    "ID_PATTERN",
    "MAX_ID_LENGTH",
    "MEMORY_MODE",
    "MEMORY_MODES",
    "RELEASE",
    "SESSION",
    "is_session_id",
    "session_of",
]
