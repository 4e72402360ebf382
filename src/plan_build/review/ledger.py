"""`decisions.tsv`: the findings and decisions ledger, in codex-review's format.

The file is handled as text, not as a table: plan-build finds the rows of the round it syncs
and rewrites only those of them whose values changed. Every other byte - comments, blank
lines, rows of other rounds, rows and columns plan-build does not know, CRLF line ends - is
written back exactly as it was read, and a sync that changes nothing writes nothing.

Differences from codex-review (docs/review.md#differences): a user's `selected` value is
kept whenever it differs from the default for the row's decision (codex-review resets a `no`
on a FIX row to `yes`); `updated_at` changes only on rows whose values changed; rows with too
few columns in the synced round are an error instead of being silently dropped.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import atomic_write
from plan_build.review.findings import SEVERITIES, sanitize
from plan_build.review.layout import stamp

COLUMNS = (
    "phase",
    "artifact",
    "round",
    "reviewer",
    "finding_id",
    "severity",
    "finding",
    "decision",
    "outcome",
    "selected",
    "status",
    "updated_at",
)
TITLE = "# Codex Review Decisions Ledger"
HINT = "# Edit `selected` to `yes` for fixes you want applied."
HEADER = f"{TITLE}\n{HINT}\n# " + "\t".join(COLUMNS) + "\n"
FILE_MODE = 0o644

# decision -> (outcome, status, default selected)
MAPPING = {
    "FIX": ("FIX", "agreed-fix", "yes"),
    "ACCEPT": ("FIX", "agreed-fix", "yes"),
    "REJECT": ("NO-CHANGE", "agreed-nochange", "no"),
    "WONTFIX": ("NO-CHANGE", "agreed-nochange", "no"),
    "DEFER": ("NO-CHANGE", "agreed-nochange", "no"),
}
UNDECIDED = ("OPEN", "proposed", "no")
SELECTED = ("yes", "no")


@dataclass(frozen=True)
class Entry:
    """What one finding's row should say after a sync."""

    reviewer: str
    finding_id: str
    severity: str
    finding: str
    decision: str  # a token, OPEN when undecided


@dataclass(frozen=True)
class Row:
    fields: tuple[str, ...]

    def get(self, column: str) -> str:
        return self.fields[COLUMNS.index(column)]

    @property
    def key(self) -> tuple[str, ...]:
        return self.fields[:5]

    def as_json(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, self.fields[:12], strict=True))


@dataclass
class Counts:
    total: int = 0
    fix: int = 0
    no_change: int = 0
    open: int = 0

    def add(self, outcome: str) -> None:
        self.total += 1
        if outcome == "FIX":
            self.fix += 1
        elif outcome == "NO-CHANGE":
            self.no_change += 1
        else:
            self.open += 1

    def as_json(self) -> dict[str, int]:
        return {
            "total": self.total,
            "fix": self.fix,
            "no_change": self.no_change,
            "open": self.open,
        }


def _bad(path: Path, line: int, what: str, fix: str) -> PlanBuildError:
    return PlanBuildError(f"{path}:{line}: {what}", fix, code=ExitCode.USAGE)


@dataclass
class _Span:
    start: int
    end: int  # exclusive, before the "\n"
    fields: list[str]
    cr: bool


def _str(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class Ledger:
    """The file's exact bytes; only the rows a command reads are decoded (a 1M-row ledger is
    held once, not as bytes plus text)."""

    def __init__(self, path: Path, text: str | bytes, existed: bool) -> None:
        self.path = path
        self.raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        self.existed = existed
        self.changed = not existed

    @property
    def text(self) -> str:
        return _str(self.raw)

    # --- reading -----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path) -> Ledger:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path, HEADER, existed=False)
        ledger = cls(path, data if data else HEADER, existed=True)
        if not data:
            ledger.changed = True
        ledger._check_header()
        return ledger

    def _check_header(self) -> None:
        """The column-name comment, when present, must start with codex-review's 12 names."""
        pos = 0
        line_no = 0
        raw = self.raw
        while pos < len(raw) and line_no < 20:
            end = raw.find(b"\n", pos)
            end = len(raw) if end < 0 else end
            line = _str(raw[pos:end]).rstrip("\r")
            line_no += 1
            pos = end + 1
            if not line.strip():
                continue
            if not line.startswith("#"):
                return
            if "\t" in line:
                names = tuple(line[1:].strip(" ").split("\t"))
                if names[: len(COLUMNS)] != COLUMNS:
                    raise _bad(
                        self.path,
                        line_no,
                        "the ledger's columns are not codex-review's "
                        f"(expected {' '.join(COLUMNS)}; found {' '.join(names)})",
                        "restore the header line, or move decisions.tsv aside so plan-build "
                        "writes a fresh one",
                    )
                return

    def _line_no(self, offset: int) -> int:
        return self.raw.count(b"\n", 0, offset) + 1

    def _spans(self, phase: str, round: int) -> list[_Span]:
        """The rows of one phase+round (artifact = phase, as both tools write them)."""
        prefix = f"{phase}\t{phase}\t{round}\t".encode("utf-8", "surrogateescape")
        text = self.raw
        starts: list[int] = [0] if text.startswith(prefix) else []
        needle = b"\n" + prefix
        pos = 0
        while True:
            i = text.find(needle, pos)
            if i < 0:
                break
            starts.append(i + 1)
            pos = i + 1
        spans: list[_Span] = []
        for start in starts:
            end = text.find(b"\n", start)
            end = len(text) if end < 0 else end
            line = text[start:end]
            cr = line.endswith(b"\r")
            fields = [_str(f) for f in (line[:-1] if cr else line).split(b"\t")]
            if len(fields) < len(COLUMNS):
                raise _bad(
                    self.path,
                    self._line_no(start),
                    f"this row has {len(fields)} TAB-separated fields, not {len(COLUMNS)} "
                    "(a TAB may have become spaces, or a field holds a newline)",
                    f"separate the columns with TABs: {' '.join(COLUMNS)}",
                )
            if fields[9] not in SELECTED:
                raise _bad(
                    self.path,
                    self._line_no(start),
                    f"selected is {fields[9]!r} for {fields[4]}",
                    "set the selected column to yes or no",
                )
            spans.append(_Span(start, end, fields, cr))
        return spans

    def rows(self, phase: str, round: int) -> list[Row]:
        return [Row(tuple(s.fields)) for s in self._spans(phase, round)]

    # --- writing -----------------------------------------------------------------------------

    def sync(self, phase: str, round: int, entries: Sequence[Entry], now: _dt.datetime) -> bool:
        """Make the round's rows say what `entries` say. Returns whether anything changed."""
        when = stamp(now)
        spans = self._spans(phase, round)
        by_key: dict[tuple[str, ...], list[_Span]] = {}
        for span in spans:
            by_key.setdefault(tuple(span.fields[:5]), []).append(span)
        edits: list[tuple[int, int, str]] = []
        added: list[str] = []
        for entry in entries:
            outcome, status, default_selected = MAPPING.get(entry.decision, UNDECIDED)
            text = sanitize(entry.finding)
            key = (phase, phase, str(round), sanitize(entry.reviewer), entry.finding_id)
            matches = by_key.get(key)
            if not matches:
                fields = [*key, entry.severity, text, entry.decision, outcome]
                added.append("\t".join([*fields, default_selected, status, when]))
                continue
            for span in matches:
                old = span.fields
                old_default = MAPPING.get(old[7], UNDECIDED)[2]
                selected = old[9] if old[9] != old_default else default_selected
                new = [*old[:5], entry.severity, text, entry.decision, outcome, selected, status]
                if new[5:11] == old[5:11]:
                    continue
                line = "\t".join([*new, when, *old[12:]]) + ("\r" if span.cr else "")
                edits.append((span.start, span.end, line))
        if not edits and not added:
            return False
        raw = self.raw
        pieces: list[bytes] = []
        last = 0
        for start, end, line in sorted(edits):
            pieces.append(raw[last:start])
            pieces.append(line.encode("utf-8", "surrogateescape"))
            last = end
        pieces.append(raw[last:])
        if added:
            first = raw.find(b"\n")
            crlf = raw[:first].endswith(b"\r") if first >= 0 else raw.endswith(b"\r")
            eol = "\r\n" if crlf else "\n"
            if raw and not raw.endswith(b"\n"):
                pieces.append(eol.encode())
            pieces.extend((row + eol).encode("utf-8", "surrogateescape") for row in added)
        self.raw = b"".join(pieces)
        self.changed = True
        return True

    def data(self) -> bytes:
        return self.raw

    def save(self) -> None:
        atomic_write(self.path, self.data(), mode=None if self.existed else FILE_MODE)
        self.existed = True
        self.changed = False


def counts(rows: Iterable[Row]) -> dict[str, Counts]:
    out = {sev: Counts() for sev in SEVERITIES}
    for row in rows:
        sev = row.get("severity").upper()
        if sev in out:
            out[sev].add(row.get("outcome"))
    return out


def ensure(path: Path) -> bool:
    """Create the header-only ledger when it is missing. Returns whether it was created."""
    if path.exists() and path.stat().st_size > 0:
        return False
    atomic_write(path, HEADER, mode=FILE_MODE)
    return True


__all__ = [
    "COLUMNS",
    "HEADER",
    "MAPPING",
    "Counts",
    "Entry",
    "Ledger",
    "Row",
    "counts",
    "ensure",
]
