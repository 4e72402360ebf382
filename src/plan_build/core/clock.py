"""The one clock: UTC now, and the one way plan-build writes a moment.

RFC 3339 in UTC, whole seconds, `Z` (`2026-03-04T05:08:09Z`): codex-review writes its
`workflow.json` and `decisions.tsv` times so, and plan-build shares those files, so every
record plan-build writes uses the same spelling. `compact` is the same moment for file and
directory names. Readers accept `Z` or any offset (older records wrote `+00:00`).
"""

from __future__ import annotations

import datetime as _dt

UTC = _dt.UTC


def now() -> _dt.datetime:
    return _dt.datetime.now(UTC)


def stamp(moment: _dt.datetime | None = None) -> str:
    """`YYYY-MM-DDTHH:MM:SSZ` (now, unless a moment is given; naive moments are local time)."""
    return (moment or now()).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compact(moment: _dt.datetime | None = None) -> str:
    """`YYYYMMDDTHHMMSSZ`: the same moment, fit for a file name."""
    return (moment or now()).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def sortable_id(moment: _dt.datetime | None = None) -> str:
    """`YYYYMMDD-HHMMSS`: the time part of codex-review's workflow ids and plan-build's session
    ids (a random suffix makes them unique)."""
    return (moment or now()).astimezone(UTC).strftime("%Y%m%d-%H%M%S")


def from_epoch(seconds: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(seconds, UTC)


def parse(text: str) -> _dt.datetime | None:
    """A moment written with `Z` or an offset, in UTC; None for anything else (a time without
    a zone is not a moment)."""
    try:
        moment = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC)
