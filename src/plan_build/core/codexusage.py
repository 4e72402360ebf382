"""Token use as Codex reported it: the `usage` of `codex exec --json`'s `turn.completed` events.

A run's usage is the sum of its `turn.completed` events, field by field. A field is known only
when every one of those events reported it as a whole number from 0 to MAX_TOKENS; otherwise
it is unknown (None), never zero-filled or estimated. A run with no usable event at all (it
failed, timed out before its turn completed, or printed no JSON) has unknown usage, which is
not the same as 0. `total` is input + output (cached input is part of input, reasoning output
part of output, as in the Responses API that Codex relays). Codex 0.171 itself reports zeros
when its model provider sent no usage; those zeros are recorded as the tool gave them.

The stream is read a line at a time from a file, so a run's output is never held whole in
memory; a line longer than MAX_LINE is skipped (counted, not parsed) and so is a line that is
not a JSON object, such as a last line cut short.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TOKENS = 10**15  # more than any run could use: a bigger figure is not a count
MAX_LINE = 4 * 1024 * 1024  # bytes; longer event lines (huge command output) are skipped
# (our name, the field of Codex's `usage`)
FIELDS = (
    ("input", "input_tokens"),
    ("cached_input", "cached_input_tokens"),
    ("cache_write_input", "cache_write_input_tokens"),
    ("output", "output_tokens"),
    ("reasoning_output", "reasoning_output_tokens"),
)
NAMES = tuple(name for name, _ in FIELDS)


def count(value: Any) -> int | None:
    """`value` as a token count: a whole number from 0 to MAX_TOKENS, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_TOKENS:
        return value
    return None


@dataclass(frozen=True)
class Usage:
    """One run's token use (or several runs' summed); None fields are unknown."""

    input: int | None = None
    cached_input: int | None = None
    cache_write_input: int | None = None
    output: int | None = None
    reasoning_output: int | None = None

    @property
    def known(self) -> bool:
        return any(getattr(self, name) is not None for name in NAMES)

    @property
    def total(self) -> int | None:
        if self.input is None or self.output is None:
            return None
        return self.input + self.output

    def as_json(self) -> dict[str, int | None] | None:
        """The telemetry shape: every field and the total; None when nothing is known."""
        if not self.known:
            return None
        return {**{name: getattr(self, name) for name in NAMES}, "total": self.total}

    def plus(self, other: Usage) -> Usage:
        """Field by field; a field unknown on either side is unknown in the sum (so is a sum
        past MAX_TOKENS, which no record would read back as a count)."""
        return Usage(
            **{
                name: None if a is None or b is None else count(a + b)
                for name in NAMES
                for a, b in [(getattr(self, name), getattr(other, name))]
            }
        )


UNKNOWN = Usage()


def from_event(usage: Any) -> Usage:
    """The usage object of one `turn.completed` event (Codex's field names)."""
    if not isinstance(usage, Mapping):
        return UNKNOWN
    return Usage(**{name: count(usage.get(key)) for name, key in FIELDS})


def from_json(value: Any) -> Usage:
    """A usage as telemetry or a round record stores it (`as_json`); unknown when unreadable."""
    if not isinstance(value, Mapping):
        return UNKNOWN
    return Usage(**{name: count(value.get(name)) for name in NAMES})


@dataclass(frozen=True)
class Summed:
    """The usage of several runs: the sum of those that reported it, and how many did not."""

    usage: Usage
    runs: int
    unknown_runs: int

    def as_json(self) -> dict[str, Any]:
        """Every field and the total (null: unknown), with the run counts beside them."""
        fields = {name: getattr(self.usage, name) for name in NAMES}
        return {
            **fields,
            "total": self.usage.total,
            "runs": self.runs,
            "unknown_runs": self.unknown_runs,
        }


def combined(sums: Iterable[Summed]) -> Summed:
    """Several sums as one (the reviewer's runs over a session's rounds)."""
    total: Usage | None = None
    runs = unknown = 0
    for s in sums:
        runs += s.runs
        unknown += s.unknown_runs
        if s.usage.known:
            total = s.usage if total is None else total.plus(s.usage)
    return Summed(total or UNKNOWN, runs, unknown)


def sum_from_json(value: Any) -> Summed:
    """A `Summed` as records keep it (`as_json`); nothing readable: no runs."""
    if not isinstance(value, Mapping):
        return Summed(UNKNOWN, 0, 0)
    runs, unknown = count(value.get("runs")), count(value.get("unknown_runs"))
    usage = from_json(value)
    if runs is None or unknown is None or unknown > runs:
        runs, unknown = (1, 0) if usage.known else (1, 1)
    return Summed(usage, runs, unknown)


def summed(usages: Iterable[Usage]) -> Summed:
    total: Usage | None = None
    runs = unknown = 0
    for u in usages:
        runs += 1
        if not u.known:
            unknown += 1
            continue
        total = u if total is None else total.plus(u)
    return Summed(total or UNKNOWN, runs, unknown)


class Tally:
    """Reads `turn.completed` events one at a time and keeps the run's usage."""

    def __init__(self) -> None:
        self.turns = 0  # turn.completed events
        self._sum: Usage | None = None

    def add(self, event: Mapping[str, Any]) -> None:
        if event.get("type") != "turn.completed":
            return
        self.turns += 1
        one = from_event(event.get("usage"))
        self._sum = one if self._sum is None else self._sum.plus(one)

    @property
    def usage(self) -> Usage:
        return self._sum or UNKNOWN


def events(path: Path, skipped: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, one line at a time. Every line that is not one
    (blank lines apart: too long, not JSON, not an object) adds 1 to `skipped[0]`."""
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        while True:
            line = handle.readline(MAX_LINE + 1)
            if not line:
                return
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest of the long line
                    line = handle.readline(MAX_LINE)
                _skip(skipped)
                continue
            if not line.strip():
                continue
            event = parse_line(line)
            if event is not None:
                yield event
            else:
                _skip(skipped)


def parse_line(line: str | bytes) -> dict[str, Any] | None:
    """One line of `codex exec --json` output as its JSON object; None for anything else (too
    long, not JSON, not an object). The one reading of an event line: usage and live progress."""
    if len(line) > MAX_LINE:
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def _skip(skipped: list[int] | None) -> None:
    if skipped is not None:
        skipped[0] += 1


def of_file(path: Path) -> Usage:
    """The usage of one run whose `--json` stdout is in `path`."""
    tally = Tally()
    for event in events(path):
        tally.add(event)
    return tally.usage


def words(usage: Usage) -> str:
    """How a screen shows a usage: `1,290 tokens (in 1,234, cached 200, out 56, reasoning 7)`,
    `unknown`, or `? tokens (…)` when the total is not known."""
    if not usage.known:
        return "unknown"
    parts = []
    for label, value in (
        ("in", usage.input),
        ("cached", usage.cached_input),
        ("cache write", usage.cache_write_input),
        ("out", usage.output),
        ("reasoning", usage.reasoning_output),
    ):
        if value is None:
            parts.append(f"{label} unknown")
        elif value or label in ("in", "out"):
            parts.append(f"{label} {value:,}")
    total = f"{usage.total:,}" if usage.total is not None else "?"
    return f"{total} tokens ({', '.join(parts)})"


def short(usage: Usage) -> str:
    """A status-line figure: `1,290 tokens`, `tokens unknown` or `tokens partly unknown`."""
    if usage.total is not None:
        return f"{usage.total:,} tokens"
    return "tokens unknown" if not usage.known else "tokens partly unknown"


def short_sum(s: Summed) -> str:
    """`short` for several runs, naming those that reported nothing: `1,290 tokens`,
    `1,290 tokens + 1 run unknown`, `tokens unknown`."""
    if s.runs in (0, s.unknown_runs):
        return "tokens unknown"
    text = short(s.usage)
    if s.unknown_runs:
        text += f" + {s.unknown_runs} run{'s' if s.unknown_runs != 1 else ''} unknown"
    return text


def words_sum(s: Summed) -> str:
    """`words` for several runs, naming those that reported nothing."""
    if s.runs in (0, s.unknown_runs):
        return "unknown"
    text = words(s.usage)
    if s.unknown_runs:
        text += f"; {s.unknown_runs} of {s.runs} runs reported nothing (unknown)"
    return text


__all__ = [
    "FIELDS",
    "MAX_LINE",
    "MAX_TOKENS",
    "NAMES",
    "UNKNOWN",
    "Summed",
    "Tally",
    "Usage",
    "combined",
    "count",
    "events",
    "from_event",
    "from_json",
    "of_file",
    "short",
    "short_sum",
    "sum_from_json",
    "summed",
    "words",
    "words_sum",
]
