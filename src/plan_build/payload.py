"""The request the user types: standard input up to a line exactly `EOF` (or end of input).

Read after preflight, preserved byte for byte (trailing spaces, unicode, lines that look like
flags or template syntax). An empty or blank request is a usage error.
"""

from __future__ import annotations

from typing import TextIO

from plan_build.errors import usage
from plan_build.ui import Console

HINT = "Describe the work. End with a line containing only EOF."
TERMINATOR = "EOF"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False


def read_payload(stream: TextIO | None, *, console: Console | None = None) -> str:
    if stream is None:
        raise usage(
            "no request given: standard input is closed",
            "type the request, or pipe it in, ending with a line containing only EOF",
        )
    tty = _is_tty(stream)
    if tty and console is not None:
        console.say(HINT)
    lines: list[str] = []
    while True:
        if tty and console is not None:
            console.stream.write("> ")
            console.stream.flush()
        line = stream.readline()
        if not line:
            break
        if line.rstrip("\r\n") == TERMINATOR:
            break
        lines.append(line)
    text = "".join(lines)
    if not text.strip():
        raise usage(
            "the request is empty",
            "describe the work on standard input and end it with a line containing only EOF",
        )
    return text
