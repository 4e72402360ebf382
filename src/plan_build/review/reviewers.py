"""What running a reviewer produced, and the rules both reviewers share.

A reviewer run ends `ok` (it reviewed), `skipped` (it could not review for a reason outside
the change: timeout, authentication, rate limit, nothing to review) or `failed` (anything
else). Only `ok` is a review; the other two are recorded with their reason and never count
as a clean round.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.fsutil import atomic_write
from plan_build.proc import quote
from plan_build.ui import Console

LOG_MODE = 0o600

_AUTH = re.compile(
    r"\b401\b|unauthori[sz]ed|invalid[_ ]api[_ ]key|not logged in|not authenticated"
    r"|log ?in required|authentication (?:failed|required|error)|auth(?:entication)? expired",
    re.IGNORECASE,
)
_RATE = re.compile(
    r"\b429\b|rate[ _-]?limit|usage limit|too many requests|quota exceeded|insufficient_quota",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RawFinding:
    """A finding as a reviewer reported it, before it gets a [SEVERITY-N] id."""

    severity: str  # CRITICAL | HIGH | MEDIUM | LOW
    title: str
    location: str = ""
    detail: str = ""


@dataclass
class Outcome:
    name: str
    status: str  # "ok" | "skipped" | "failed"
    reason: str | None = None
    text: str = ""  # Codex: its answer
    findings: list[RawFinding] = field(default_factory=list)  # CodeRabbit's
    seconds: float = 0.0
    argv: list[str] = field(default_factory=list)
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def classify(name: str, message: str) -> tuple[str, str]:
    """(status, reason) for a reviewer that stopped with `message`."""
    first = " ".join(message.split())[:300] or "no output"
    if _RATE.search(message):
        return "skipped", f"rate limited ({first})"
    if _AUTH.search(message):
        return "skipped", f"authentication failed ({first})"
    return "failed", f"{name} failed: {first}"


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def heartbeat(
    console: Console, name: str, doing: str, *, live: bool = True
) -> tuple[Callable[[float], None], float]:
    """A heartbeat for proc.run and how often to call it: a live status line every second on
    a terminal, one line every 30 s otherwise (and when two reviewers run at once)."""
    if console.fancy and live:

        def status_line(elapsed: float) -> None:
            console.stream.write(f"\r\033[K  {name:<11} {doing} · {duration(elapsed)}")
            console.stream.flush()

        return status_line, 1.0

    def line(elapsed: float) -> None:
        console.say(f"  {name:<11} still {doing} · {duration(elapsed)}")

    return line, 30.0


def end_live_line(console: Console) -> None:
    if console.fancy:
        console.stream.write("\r\033[K")
        console.stream.flush()


def keep_log(directory: Path, name: str, argv: Sequence[str], stdout: str, stderr: str) -> Path:
    """Keep a failed call's output beside the artifacts (mode 0600), as codex-review does."""
    digits = str(secrets.randbelow(10**12)).zfill(12)
    path = directory / f"{name}-exec.{digits}.log"
    body = f"$ {quote(argv)}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n"
    atomic_write(path, body, mode=LOG_MODE)
    return path


__all__ = [
    "Outcome",
    "RawFinding",
    "classify",
    "duration",
    "end_live_line",
    "heartbeat",
    "keep_log",
]
