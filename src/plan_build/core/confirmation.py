"""What an approval record says about how it was confirmed: only what was established.

`confirmed_how` in the commit's and in the review rounds' approval records (issue 35, docs/adr/
0192) names facts, never a conclusion an agent could have produced ("no agent among the
ancestors" could be arranged by one):

- whether the answer came on a terminal (or that nothing needed asking);
- that this process could write plan-build's protected state under the git dir, which the
  session's sandbox keeps read-only for everything Claude's tools start: so it ran outside it
  (established by writing there just now, not by reading the environment);
- the session's guard as its launch recorded it (`sandbox`, `unguarded`, or not recorded).
"""

from __future__ import annotations

import os
from pathlib import Path

GUARDS = ("sandbox", "unguarded")


def protected_writable(state_dir: Path) -> bool:
    """Whether this process can create a file in plan-build's state folder (and did, briefly)."""
    probe = state_dir / f".confirm-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def guard_text(guard: object) -> str:
    """The session's guard as recorded at launch; anything else (an older session) is said so."""
    if guard == "sandbox":
        return "session guard at launch: sandbox (Claude Code's OS sandbox)"
    if guard == "unguarded":
        return "session guard at launch: UNGUARDED (no OS sandbox; chosen by the user)"
    return "session guard at launch: not recorded"


def how(*, answered: str, state_dir: Path, guard: object) -> str:
    """`confirmed_how`: the answer's channel, the protected write, the recorded guard."""
    wrote = (
        "this process wrote plan-build's protected state (read-only inside the session's "
        "sandbox), so it ran outside the sandbox"
        if protected_writable(state_dir)
        else "this process could not write plan-build's protected state"
    )
    return f"{answered}; {wrote}; {guard_text(guard)}"


ON_TERMINAL = "answered on a terminal"
NOT_ASKED = "not asked: nothing deferred and no reviewer waived"

__all__ = ["GUARDS", "NOT_ASKED", "ON_TERMINAL", "guard_text", "how", "protected_writable"]
