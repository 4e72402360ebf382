"""Line-level three-way splicing: keep two sets of edits of one file apart, or say where they meet.

A file's bytes are split into lines at b"\\n" (the last line may lack one), exactly as git
counts them. A hunk says "base lines [start, end) became these lines of the other side"; a
pure insertion has start == end. Two edits *conflict* when they overlap or adjoin, i.e. when
no unchanged base line separates them: then nobody can say which bytes belong to whom, and
plan-build stops instead of guessing. Otherwise `splice` applies both sets to the base.

Hunks come from `git diff -U0` headers (`parse_u0`) and are checked against the actual bytes
(`validate`) before anything is built from them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    start: int  # 0-based index of the first base line replaced (insertion point if length 0)
    length: int  # base lines replaced
    new_start: int  # 0-based index of the replacement in the other side
    new_length: int

    @property
    def end(self) -> int:
        return self.start + self.length

    def base_lines(self) -> str:
        """1-based base line numbers for a message: 'line 4', 'lines 4-6', 'after line 3'."""
        return _describe(self.start, self.length)

    def new_lines(self) -> str:
        return _describe(self.new_start, self.new_length)


def _describe(start: int, length: int) -> str:
    if length == 0:
        return f"after line {start}" if start else "at the top"
    if length == 1:
        return f"line {start + 1}"
    return f"lines {start + 1}-{start + length}"


def split_lines(data: bytes) -> list[bytes]:
    """Lines as git counts them: split after every b"\\n"; a final partial line is a line."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def parse_u0(diff: bytes) -> list[Hunk]:
    """Hunks from the headers of a zero-context unified diff (`git diff -U0`)."""
    hunks = []
    for line in diff.split(b"\n"):
        m = _HEADER.match(line)
        if not m:
            continue
        a, b, c, d = (int(g) if g is not None else 1 for g in m.groups())
        start = a if b == 0 else a - 1
        new_start = c if d == 0 else c - 1
        hunks.append(Hunk(start, b, new_start, d))
    return hunks


def validate(hunks: Sequence[Hunk], base: Sequence[bytes], other: Sequence[bytes]) -> None:
    """Raise ValueError unless `hunks` turn `base` into `other` exactly."""
    pos_b = pos_o = 0
    for h in sorted(hunks, key=lambda h: (h.start, h.length)):
        if h.start < pos_b or h.end > len(base):
            raise ValueError("hunks overlap or run past the end of the base")
        gap = h.start - pos_b
        if h.new_start != pos_o + gap or base[pos_b : h.start] != other[pos_o : pos_o + gap]:
            raise ValueError("unchanged lines between hunks do not match")
        pos_b = h.end
        pos_o = h.new_start + h.new_length
        if pos_o > len(other):
            raise ValueError("a hunk runs past the end of the other side")
    if base[pos_b:] != other[pos_o:]:
        raise ValueError("the lines after the last hunk do not match")


def touches(x: Hunk, y: Hunk) -> bool:
    """True when the hunks overlap or adjoin (no unchanged base line lies between them)."""
    return x.start <= y.end and y.start <= x.end


def conflicts(xs: Sequence[Hunk], ys: Sequence[Hunk]) -> list[tuple[Hunk, Hunk]]:
    return [(x, y) for x in xs for y in ys if touches(x, y)]


def splice(
    base: Sequence[bytes],
    a: Sequence[bytes],
    a_hunks: Sequence[Hunk],
    b: Sequence[bytes],
    b_hunks: Sequence[Hunk],
) -> bytes:
    """Base with both sides' edits applied. The caller has checked there are no conflicts."""
    if conflicts(a_hunks, b_hunks):
        raise ValueError("the edits conflict")
    edits = sorted(
        [(h, a) for h in a_hunks] + [(h, b) for h in b_hunks], key=lambda e: (e[0].start, e[0].end)
    )
    out: list[bytes] = []
    pos = 0
    for h, side in edits:
        out.extend(base[pos : h.start])
        out.extend(side[h.new_start : h.new_start + h.new_length])
        pos = h.end
    out.extend(base[pos:])
    return b"".join(out)


__all__ = ["Hunk", "conflicts", "parse_u0", "splice", "split_lines", "touches", "validate"]
