"""Human output: stderr only, quiet when all is well, plain ASCII without a colour terminal."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TextIO


def printable(text: str) -> str:
    """`text` safe to show on a terminal: control characters (C0 such as CR, ESC, BEL; C1 such
    as CSI U+009B; format and separator characters such as U+202E) escaped as Python writes
    them, so a crafted file name, finding or task cannot rewrite the line it is shown on, set
    the window title or clear the screen. The one terminal escaping (ADR 0194)."""
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


def printable_lines(text: str) -> str:
    """`text` made `printable` line by line: its newlines stay line breaks."""
    return "\n".join(printable(line) for line in text.split("\n"))


@dataclass
class Console:
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    fancy: bool | None = None

    def __post_init__(self) -> None:
        if self.fancy is None:
            try:
                tty = self.stream.isatty()
            except (ValueError, AttributeError):
                tty = False
            self.fancy = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"

    def say(self, text: str = "") -> None:
        """One or more lines on the screen, every control character in them escaped: a text
        from a reviewer, an agent, TASKS.md or a workflow file is shown, never obeyed."""
        self.stream.write(printable_lines(text) + "\n")
        self.stream.flush()

    def mark(self, status: str) -> str:
        """The symbol for a check status (pass/fail/warn/skip)."""
        if self.fancy:
            return {"pass": "✔", "fail": "✘", "warn": "!", "skip": "-"}.get(status, "?")
        return {"pass": "ok  ", "fail": "FAIL", "warn": "WARN", "skip": "skip"}.get(status, "?   ")

    def arrow(self) -> str:
        return "→" if self.fancy else "->"
