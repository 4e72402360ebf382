"""Line-level splicing, checked against an independent model of edits (no git needed)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_build.core import hunks
from plan_build.core.hunks import Hunk
from tests.support.properties import examples


@dataclass
class Edits:
    """Edits of original lines by index: replace/delete line i, insert after line i (-1: top)."""

    replace: dict[int, bytes] = field(default_factory=dict)
    delete: set[int] = field(default_factory=set)
    insert: dict[int, list[bytes]] = field(default_factory=dict)

    def positions(self) -> set[float]:
        return {
            *map(float, self.replace),
            *map(float, self.delete),
            *(i + 0.5 for i in self.insert),
        }

    def apply(self, lines: list[bytes]) -> list[bytes]:
        out = list(self.insert.get(-1, []))
        for i, line in enumerate(lines):
            if i in self.replace:
                out.append(self.replace[i])
            elif i not in self.delete:
                out.append(line)
            out.extend(self.insert.get(i, []))
        return out

    def hunks(self, n: int) -> list[Hunk]:
        """The hunks of these edits, built by hand (not by a diff algorithm)."""
        result = []
        new_pos = len(self.insert.get(-1, []))
        if new_pos:
            result.append(Hunk(0, 0, 0, new_pos))
        for i in range(n):
            if i in self.replace or i in self.delete:
                added = 1 if i in self.replace else 0
                result.append(Hunk(i, 1, new_pos, added))
                new_pos += added
            else:
                new_pos += 1
            if i in self.insert:
                k = len(self.insert[i])
                result.append(Hunk(i + 1, 0, new_pos, k))
                new_pos += k
        return _coalesce(result)


def _coalesce(hs: list[Hunk]) -> list[Hunk]:
    """Join hunks that touch end to start, as a diff would print them."""
    out: list[Hunk] = []
    for h in hs:
        joined = h
        if out and out[-1].end == h.start and out[-1].new_start + out[-1].new_length == h.new_start:
            last = out.pop()
            joined = Hunk(
                last.start, last.length + h.length, last.new_start, last.new_length + h.new_length
            )
        out.append(joined)
    return out


def edits_at(positions: set[float], tag: str) -> Edits:
    e = Edits()
    for p in sorted(positions):
        if p != int(p):
            e.insert[int(p - 0.5)] = [f"{tag} inserted after {p}\n".encode()]
        elif int(p) % 3 == 0:
            e.delete.add(int(p))
        else:
            e.replace[int(p)] = f"{tag} replaced {int(p)}\n".encode()
    return e


def separated(p: set[float], q: set[float]) -> bool:
    return all(abs(a - b) >= 2 for a in p for b in q)


POSITIONS = st.sets(st.sampled_from([x / 2 for x in range(-1, 24)]), max_size=5)


@settings(max_examples=examples(300))
@given(n=st.integers(min_value=1, max_value=12), a_pos=POSITIONS, b_pos=POSITIONS)
def test_separated_edits_splice_like_the_model(
    n: int, a_pos: set[float], b_pos: set[float]
) -> None:
    a_pos = {p for p in a_pos if p < n}
    b_pos = {p for p in b_pos if p < n}
    base = [f"line {i}\n".encode() for i in range(n)]
    a, b = edits_at(a_pos, "A"), edits_at(b_pos, "B")
    a_lines, b_lines = a.apply(base), b.apply(base)
    a_h, b_h = a.hunks(n), b.hunks(n)
    hunks.validate(a_h, base, a_lines)
    hunks.validate(b_h, base, b_lines)
    if separated(a_pos, b_pos):
        assert hunks.conflicts(a_h, b_h) == []
        both = Edits({**a.replace, **b.replace}, a.delete | b.delete, {**a.insert, **b.insert})
        assert hunks.splice(base, a_lines, a_h, b_lines, b_h) == b"".join(both.apply(base))


@settings(max_examples=examples(300))
@given(
    n=st.integers(min_value=2, max_value=12),
    p=st.sampled_from([x / 2 for x in range(-1, 24)]),
    d=st.sampled_from([-1, -0.5, 0, 0.5, 1]),
)
def test_edits_with_no_unchanged_line_between_always_conflict(n: int, p: float, d: float) -> None:
    q = p + d
    if not (-0.5 <= p < n and -0.5 <= q < n) or (p == q and p == int(p) and int(p) % 3 == 0):
        return
    if abs(p - q) == 1 and p != int(p):  # two insertions with a line between: no conflict
        return
    base = [f"line {i}\n".encode() for i in range(n)]
    a, b = edits_at({p}, "A"), edits_at({q}, "B")
    if a.apply(base) == base or b.apply(base) == base:
        return
    assert hunks.conflicts(a.hunks(n), b.hunks(n)), (p, q)


def test_touches_is_overlap_or_adjacency() -> None:
    change_4 = Hunk(4, 1, 4, 1)
    assert hunks.touches(change_4, Hunk(5, 1, 5, 1))  # adjoining lines
    assert not hunks.touches(change_4, Hunk(6, 1, 6, 1))  # line 5 between
    assert hunks.touches(change_4, Hunk(5, 0, 5, 2))  # insertion right after
    assert hunks.touches(Hunk(3, 0, 3, 1), Hunk(3, 0, 3, 1))  # same insertion point
    assert not hunks.touches(Hunk(3, 0, 3, 1), Hunk(4, 0, 5, 1))


def test_split_lines_keeps_a_missing_final_newline() -> None:
    assert hunks.split_lines(b"a\nb") == [b"a\n", b"b"]
    assert hunks.split_lines(b"a\r\nb\n") == [b"a\r\n", b"b\n"]
    assert hunks.split_lines(b"") == []


def test_validate_rejects_hunks_that_do_not_describe_the_bytes() -> None:
    with pytest.raises(ValueError, match="do not match"):
        hunks.validate([Hunk(0, 1, 0, 1)], [b"a\n", b"b\n"], [b"x\n", b"c\n"])


@settings(max_examples=examples(60), deadline=None)
@given(
    base=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e"]), max_size=8),
    other=st.lists(st.sampled_from(["a\n", "b\n", "x\n", "d\n", "y"]), max_size=8),
)
def test_git_u0_headers_parse_into_hunks_that_validate(
    tmp_path_factory: pytest.TempPathFactory, base: list[str], other: list[str]
) -> None:
    """Whatever alignment git's diff picks, the parsed hunks describe the bytes exactly."""
    d = tmp_path_factory.mktemp("u0")
    (d / "base").write_text("".join(base))
    (d / "other").write_text("".join(other))
    out = subprocess.run(
        ["git", "diff", "--no-index", "-U0", "-a", "--no-color", "base", "other"],
        cwd=d,
        capture_output=True,
        check=False,
    ).stdout
    b_lines = hunks.split_lines("".join(base).encode())
    o_lines = hunks.split_lines("".join(other).encode())
    parsed = hunks.parse_u0(out)
    hunks.validate(parsed, b_lines, o_lines)
    assert hunks.splice(b_lines, o_lines, parsed, b_lines, []) == "".join(other).encode()


def test_parse_u0_reads_counts_and_insertions(tmp_path: Path) -> None:
    diff = b"@@ -3,0 +4,2 @@\n+x\n+y\n@@ -5,2 +6,0 @@\n-a\n-b\n@@ -9 +8 @@\n-c\n+d\n"
    assert hunks.parse_u0(diff) == [Hunk(3, 0, 3, 2), Hunk(4, 2, 6, 0), Hunk(8, 1, 7, 1)]
