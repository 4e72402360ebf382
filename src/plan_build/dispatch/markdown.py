"""Markdown lines as TASKS.md is read: offsets kept for splicing, fenced-code state, headings,
bullets, inline code and the decorations (`**bold**`, `code`) a value may wear."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(?P<item>.*?)[ \t]*$")
BACKTICKS = re.compile(r"(`+)(.+?)\1")


@dataclass(frozen=True)
class Line:
    no: int  # 1-based
    start: int  # offset of the first character (after a BOM on line 1)
    end: int  # offset after the line ending
    content: str  # without the line ending
    fenced: bool  # inside (or the delimiter of) a fenced code block


def lines(text: str) -> list[Line]:
    out: list[Line] = []
    pos = 0
    fence: tuple[str, int] | None = None
    for no, raw in enumerate(text.splitlines(keepends=True), start=1):
        start = pos
        pos += len(raw)
        content = raw.rstrip("\r\n")
        if no == 1 and content.startswith("\ufeff"):
            content = content[1:]
            start += 1
        m = FENCE.match(content)
        fenced = fence is not None
        if fence is None and m:
            fence = (m.group(1)[0], len(m.group(1)))
            fenced = True
        elif (
            fence is not None
            and m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= fence[1]
            and not m.group(2).strip()
        ):
            fence = None
        out.append(Line(no, start, pos, content, fenced))
    return out


def decorations(value: str) -> str:
    v = value.strip()
    for mark in ("**", "__", "`", "*", "_"):
        if len(v) > 2 * len(mark) - 1 and v.startswith(mark) and v.endswith(mark):
            v = v[len(mark) : -len(mark)].strip()
    return v


def first_backticks(item: str) -> str | None:
    m = BACKTICKS.search(item)
    return m.group(2).strip() if m else None


def unwrap_fence(body: str) -> str:
    stripped = body.strip("\r\n")
    lines = stripped.splitlines()
    if len(lines) >= 2:
        m = FENCE.match(lines[0])
        last = lines[-1].strip()
        if m and last and set(last) == {m.group(1)[0]} and len(last) >= len(m.group(1)):
            inner = "\n".join(lines[1:-1])
            if not FENCE.match(inner.splitlines()[0] if inner else ""):
                return inner + "\n"
    return body.strip("\r\n") + "\n" if body.strip() else ""


def content_end(text: str, start: int, end: int) -> int:
    """The offset just after the last non-blank line in text[start:end] (after its newline)."""
    chunk = text[start:end]
    stripped = chunk.rstrip(" \t\r\n")
    if not stripped:
        return start
    pos = start + len(stripped)
    nl_at = text.find("\n", pos)
    return end if nl_at == -1 or nl_at >= end else nl_at + 1
