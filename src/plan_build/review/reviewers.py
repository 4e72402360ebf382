"""What running a reviewer produced, and the rules both reviewers share.

A reviewer run ends `ok` (it reviewed), `skipped` (it could not review for a reason outside
the change: timeout, authentication, rate limit, nothing to review) or `failed` (anything
else). Only `ok` is a review; the other two are recorded with their reason and never count
as a clean round.
"""

from __future__ import annotations

import math
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import codexusage, proc
from plan_build.core.codexusage import Usage
from plan_build.core.fsutil import atomic_write
from plan_build.core.ui import Console

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
    exit_code: int | None = None  # the reviewer process's exit status, when it exited
    stderr_tail: str | None = None  # the end of its stderr, when it did not review
    usages: list[Usage] = field(default_factory=list)  # one per Codex run, as Codex reported it

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def usage_sum(self) -> dict[str, object] | None:
        """What the round record keeps: the runs' usage summed (None: not a Codex reviewer)."""
        return codexusage.summed(self.usages).as_json() if self.usages else None


def classify(name: str, message: str) -> tuple[str, str]:
    """(status, reason) for a reviewer that stopped with `message`."""
    first = " ".join(message.split())[:300] or "no output"
    if _RATE.search(message):
        return "skipped", f"rate limited ({first})"
    if _AUTH.search(message):
        return "skipped", f"authentication failed ({first})"
    return "failed", f"{name} failed: {first}"


def tail(text: str, lines: int = 20, limit: int = 2000) -> str:
    """The last non-blank lines of a stream (at most `limit` characters), for records."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join(kept)[-limit:]


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


HEARTBEAT = 30.0  # seconds between progress lines off a terminal
HEARTBEAT_ENV = "PLAN_BUILD_HEARTBEAT_SEC"  # overrides it (tests, CI logs)


def heartbeat_every(env: Mapping[str, str]) -> float:
    """The interval of progress lines off a terminal: PLAN_BUILD_HEARTBEAT_SEC, else 30 s."""
    try:
        value = float(env.get(HEARTBEAT_ENV, "") or HEARTBEAT)
    except ValueError:
        return HEARTBEAT
    return value if math.isfinite(value) and 0 < value <= 3600 else HEARTBEAT


class Progress:
    """One status line for every reviewer of a round, e.g.
    `codex reviewing · 41s · coderabbit done (3 findings)`: redrawn every second on a
    terminal, printed as a plain line every `every` seconds otherwise. Reviewers running in
    other threads report with `finish`."""

    def __init__(self, console: Console, names: Sequence[str], *, every: float = HEARTBEAT):
        self.console = console
        self.names = list(names)
        self.every = every
        self.started = time.monotonic()
        self._state = dict.fromkeys(self.names, "reviewing")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        elapsed = duration(time.monotonic() - self.started)
        parts = []
        for name in self.names:
            state = self._state[name]
            parts.append(
                f"{name} {state} · {elapsed}" if state == "reviewing" else f"{name} {state}"
            )
        return " · ".join(parts)

    def render(self) -> None:
        with self._lock:
            if self.console.fancy:
                self.console.stream.write(f"\r\033[K  {self.line()}")
                self.console.stream.flush()
            else:
                self.console.say(f"  {self.line()}")

    def say(self, text: str) -> None:
        """A line of its own while the progress line runs (the live line is redrawn next tick)."""
        with self._lock:
            end_live_line(self.console)
            self.console.say(text)

    def finish(self, name: str, state: str) -> None:
        """`name` is no longer reviewing: `state` is what it ended with."""
        with self._lock:
            self._state[name] = state
        if self.console.fancy:
            self.render()

    def _run(self) -> None:
        period = 1.0 if self.console.fancy else self.every
        while not self._stop.wait(period):
            self.render()

    def __enter__(self) -> Progress:
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="review-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        end_live_line(self.console)


def findings_state(outcome: Outcome, count: int) -> str:
    """How a reviewer's part of the progress line reads once it has stopped."""
    if not outcome.ok:
        return outcome.status
    if count == 0:
        return "done (no findings)"
    return f"done ({count} finding{'s' if count != 1 else ''})"


def end_live_line(console: Console) -> None:
    if console.fancy:
        console.stream.write("\r\033[K")
        console.stream.flush()


def run_timed(
    name: str,
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    log_dir: Path,
    shown: list[str] | None = None,
    input: str | None = None,
    cancel: threading.Event | None = None,
    last: Callable[[str], str] | None = None,
    stdout_file: Path | None = None,
) -> proc.Completed | Outcome:
    """Run a reviewer. Outliving `timeout` makes it skipped, not failed:
    the output so far is kept in the log and `last(stdout)`, when given, names what it said
    last. `shown` is the argv as logged (Codex's prompt argument is left out). With
    `stdout_file` the output goes to that file instead of memory (`proc.run`)."""
    shown = argv if shown is None else shown
    try:
        return proc.run(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            input=input,
            cancel=cancel,
            stdout_file=stdout_file,
        )
    except proc.CommandTimeout as exc:
        stdout = exc.stdout if stdout_file is None else bounded_text(stdout_file)
        said = last(stdout) if last else ""
        log = keep_log(log_dir, name, shown, stdout, "")
        reason = f"timed out after {duration(timeout)}" + (f" (last: {said})" if said else "")
        return Outcome(name, "skipped", reason, seconds=timeout, argv=shown, log=log)


LOG_KEEP = 1024 * 1024  # bytes of a large stdout a log keeps: its start and its end


def bounded_text(path: Path, keep: int = LOG_KEEP) -> str:
    """A file's text for a log: whole when small, else its start and end around a note."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if size <= keep:
                return handle.read().decode("utf-8", "replace")
            head = handle.read(keep // 2)
            handle.seek(size - keep // 2)
            tail = handle.read()
    except OSError:
        return ""
    note = f"\n[… {size - len(head) - len(tail):,} bytes left out …]\n"
    return head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace")


def keep_log(directory: Path, name: str, argv: Sequence[str], stdout: str, stderr: str) -> Path:
    """Keep a failed call's output beside the artifacts (mode 0600), as codex-review does."""
    digits = str(secrets.randbelow(10**12)).zfill(12)
    path = directory / f"{name}-exec.{digits}.log"
    body = f"$ {proc.quote(argv)}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n"
    atomic_write(path, body, mode=LOG_MODE)
    return path


__all__ = [
    "HEARTBEAT",
    "HEARTBEAT_ENV",
    "LOG_KEEP",
    "Outcome",
    "Progress",
    "RawFinding",
    "bounded_text",
    "classify",
    "duration",
    "end_live_line",
    "findings_state",
    "heartbeat_every",
    "keep_log",
    "run_timed",
    "tail",
]
