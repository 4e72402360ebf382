"""A session's story: every event its records hold, as plain data the report renders.

The model only; `storyread` fills it from the records. Kept apart so a report can be drawn
from a story built by hand (the golden files, the benchmark) exactly as from a real one.
Every fact no record holds is None (shown as "unknown"), never a guess: token counts are the
figures Codex reported or "unknown", never an estimate (`codexusage`, docs/adr/0175).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from plan_build.core.codexusage import Summed, Usage

UNKNOWN = "unknown"
MAX_DIFF = 200_000  # bytes of the change's diff a report reads and shows; the rest is counted
T = TypeVar("T")


@dataclass(frozen=True)
class Event:
    """One mark on the timeline."""

    kind: str  # baseline | review | decisions | dispatch | correction | verify | commit
    label: str
    at: str  # UTC, ISO 8601
    seconds: float | None = None  # how long it took (None: a moment, or not recorded)


@dataclass(frozen=True)
class FileRow:
    path: str
    status: str
    added: int | None  # None: binary
    removed: int | None


@dataclass(frozen=True)
class FindingRow:
    id: str
    severity: str
    reviewer: str
    location: str | None  # file:line when the finding names one
    text: str
    decision: str | None  # FIX / ACCEPT / REJECT / DEFER / WONTFIX; None: undecided
    reason: str | None
    outcome: str  # the ledger's outcome: FIX / NO-CHANGE / OPEN


@dataclass(frozen=True)
class ReviewerRow:
    name: str
    result: str  # clean / findings / failed / skipped / unknown
    seconds: float | None
    reason: str | None
    usage: Summed | None = None  # Codex's token use in the round; None: not a Codex reviewer


@dataclass(frozen=True)
class RoundStory:
    workflow: str
    phase: str
    round: int
    started_at: str | None
    finished_at: str | None
    reviewers: tuple[ReviewerRow, ...]
    findings: tuple[FindingRow, ...]
    approved_at: str | None


@dataclass(frozen=True)
class CheckRow:
    name: str
    passed: bool | None
    exit: int | None
    seconds: float | None


@dataclass(frozen=True)
class AttemptStory:
    number: int
    role: str
    at: str
    seconds: float | None
    outcome: str
    changed_files: int | None
    outside_scope: int | None
    checks: tuple[CheckRow, ...]
    usage: Usage  # as Codex reported it (fields None: unknown)


@dataclass(frozen=True)
class TaskStory:
    id: str
    title: str
    scope: tuple[str, ...]
    dispatch: str
    outcome: str | None
    reason: str | None
    attempts: tuple[AttemptStory, ...]
    evidence: str | None  # the evidence block the dispatch wrote into TASKS.md


@dataclass(frozen=True)
class VerifyCheck:
    id: str
    status: str
    detail: str
    seconds: float | None
    tail: str = ""  # a command's last output lines, from its log (already redacted there)


@dataclass(frozen=True)
class VerifyStory:
    at: str | None
    ok: bool
    stale: bool | None
    checks: tuple[VerifyCheck, ...]


@dataclass(frozen=True)
class Header:
    id: str
    mode: str | None
    started_at: str
    branch: str | None
    baseline_commit: str | None
    committed: str | None
    committed_at: str | None
    memory_mode: str | None
    memory_reason: str | None
    identity: str | None
    guard: str | None = None  # "sandbox" / "unguarded" as the launch recorded it (ADR 0190)
    last_checkpoint: str | None = None  # when the work tree was last checkpointed (ADR 0198)


@dataclass(frozen=True)
class Story:
    header: Header
    outcome: str  # "committed as <sha>" / "ready to commit" / "missing: …"
    files: tuple[FileRow, ...]
    diff: str
    rounds: tuple[RoundStory, ...]
    tasks: tuple[TaskStory, ...]
    verify: VerifyStory | None
    tokens: dict[str, Summed]  # per dispatch role, then "reviewer (review rounds)"
    recipes: tuple[str, ...]  # the recipe fingerprints the dispatches ran with
    events: tuple[Event, ...]
    archived: bool = False  # an architect session whose records were archived since
    diff_left_out: str | None = None  # what of the diff was cut before redaction, in words
    diff_whole: bool = True  # False: `diff` is only the start of it (git was stopped)

    @property
    def empty(self) -> bool:
        """Nothing happened yet but the baseline."""
        return all(e.kind == "baseline" for e in self.events) and not self.files


def map_strings(value: T, fn: Callable[[str], str]) -> T:
    """`value` with `fn` applied to every string inside it (dataclasses, tuples, dicts). A part
    in which nothing changed is the same object (a report's 5,000 file rows are rebuilt only
    where redaction changed them)."""
    out: Any
    if isinstance(value, str):
        out = fn(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for name in _field_names(type(value)):
            before = getattr(value, name)
            after = map_strings(before, fn)
            if not _same(after, before):
                changes[name] = after
        out = dataclasses.replace(value, **changes) if changes else value
    elif isinstance(value, tuple):
        items = [map_strings(v, fn) for v in value]
        out = value if all(map(_same, items, value)) else tuple(items)
    elif isinstance(value, dict):
        out = {map_strings(k, fn): map_strings(v, fn) for k, v in value.items()}
    else:
        out = value
    return out  # type: ignore[no-any-return]


def _same(after: object, before: object) -> bool:
    """Unchanged: the same object, or an equal string (redaction gives back new strings)."""
    return after is before or (isinstance(after, str) and after == before)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def strings(value: object) -> list[str]:
    """Every string inside `value`, in the order `map_strings` visits them."""
    found: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            found.append(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for name in _field_names(type(v)):
                walk(getattr(v, name))
        elif isinstance(v, tuple):
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            for k, item in v.items():
                walk(k)
                walk(item)

    walk(value)
    return found


__all__ = [
    "MAX_DIFF",
    "UNKNOWN",
    "AttemptStory",
    "CheckRow",
    "Event",
    "FileRow",
    "FindingRow",
    "Header",
    "ReviewerRow",
    "RoundStory",
    "Story",
    "TaskStory",
    "VerifyCheck",
    "VerifyStory",
    "map_strings",
    "strings",
]
