"""A wave's live progress: one line per running task (its state, time so far, Codex's last
event), e.g. `TASK-002 attempt 1 (codex) · 41s · item.completed (command_execution)`.

On a terminal the lines are redrawn in place every second, and whatever a task says in between
is printed above them; off a terminal (a log, Claude's shell tool) the lines are printed every
PLAN_BUILD_HEARTBEAT_SEC seconds (30 by default), the same interval review rounds use.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from plan_build.core import codexusage
from plan_build.core.ui import Console, printable
from plan_build.dispatch.evidence import human_seconds

HEARTBEAT = 30.0
HEARTBEAT_ENV = "PLAN_BUILD_HEARTBEAT_SEC"


def heartbeat_every(env: Mapping[str, str]) -> float:
    """PLAN_BUILD_HEARTBEAT_SEC, else 30 s (as review rounds read it)."""
    try:
        value = float(env.get(HEARTBEAT_ENV, "") or HEARTBEAT)
    except ValueError:
        return HEARTBEAT
    return value if math.isfinite(value) and 0 < value <= 3600 else HEARTBEAT


def event_label(line: str) -> str | None:
    """A short name for one line of `codex exec --json` output (`turn.started`,
    `item.completed (command_execution)`), or None for a line that is not an event. Tolerant:
    anything unexpected is skipped, never an error (the stream is only shown here)."""
    event = codexusage.parse_line(line)
    if event is None:
        return None
    kind = event.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > 64:
        return None
    item = event.get("item")
    sort = item.get("type") if isinstance(item, dict) else None
    if isinstance(sort, str) and sort and len(sort) <= 64:
        return printable(f"{kind} ({sort})")
    return printable(kind)


class Shown(Protocol):
    task_id: str
    state: str
    started: float
    flight: Any


def _event(run: Shown) -> str:
    d = run.flight
    last = getattr(d, "last_event", "") if d is not None else ""
    return f" · {last}" if last else ""


def line(run: Shown, now: float) -> str:
    state = run.state
    d = run.flight
    if d is not None and state in ("starting", "running"):
        state = d.phase
    return f"{run.task_id} {state} · {human_seconds(now - run.started)}{_event(run)}"


class _Relay(Console):
    """The console a wave's tasks speak through: a line of theirs goes above the live block,
    marked with the task it is about (two tasks' lines interleave)."""

    def __init__(self, progress: WaveProgress, task_id: str) -> None:
        super().__init__(stream=progress.console.stream, fancy=progress.console.fancy)
        self._progress = progress
        self._tag = f"[{task_id}] "

    def say(self, text: str = "") -> None:
        self._progress.say(self._tag + text if text.strip() else text)


class WaveProgress:
    def __init__(self, console: Console, runs: Sequence[Shown], *, every: float = HEARTBEAT):
        self.console = console
        self.runs = list(runs)
        self.every = every
        self._drawn = 0  # live lines on screen (terminal only)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def relay(self, task_id: str) -> Console:
        return _Relay(self, task_id)

    def lines(self) -> list[str]:
        now = time.monotonic()
        return [line(r, now) for r in self.runs if not r.state.startswith(("done", "waiting"))]

    def _clear(self) -> None:
        if self._drawn:
            self.console.stream.write(f"\033[{self._drawn}F\033[J")
            self._drawn = 0

    def render(self) -> None:
        with self._lock:
            shown = self.lines()
            if self.console.fancy:
                self._clear()
                for text in shown:
                    self.console.stream.write(f"  {text}\n")
                self._drawn = len(shown)
                self.console.stream.flush()
            else:
                for text in shown:
                    self.console.say(f"  … {text}")

    def say(self, text: str) -> None:
        with self._lock:
            if self.console.fancy:
                self._clear()
            self.console.say(text)

    def _run(self) -> None:
        period = 1.0 if self.console.fancy else self.every
        while not self._stop.wait(period):
            self.render()

    def __enter__(self) -> WaveProgress:
        self._thread = threading.Thread(target=self._run, name="wave-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.console.fancy:
                self._clear()
                self.console.stream.flush()


__all__ = ["WaveProgress", "event_label", "heartbeat_every", "line"]
