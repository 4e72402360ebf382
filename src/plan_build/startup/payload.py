"""The request the user types: standard input up to a line exactly `EOF` (or end of input).

Read after preflight, preserved byte for byte (trailing spaces, unicode, CRLF line ends, lines
that look like flags or template syntax). The terminator line itself is `EOF` alone, with or
without a line end (`EOF\\r\\n` counts too, for text pasted from Windows). An empty or blank
request, one that is not UTF-8, one holding a NUL byte (no program argument can carry it) or
one larger than `max_bytes` is a usage error.

When the stream has a binary buffer (a real stdin), lines are read as bytes and decoded as
strict UTF-8 here, so a bad byte is reported with its offset instead of crashing the decoder.
"""

from __future__ import annotations

from typing import BinaryIO, TextIO

from plan_build.core.errors import PlanBuildError, usage
from plan_build.core.ui import Console

HINT = "Describe the work. End with a line containing only EOF."
TERMINATOR = "EOF"
MAX_BYTES = 1024 * 1024
_TERMINATOR_LINES = (b"EOF", b"EOF\n", b"EOF\r\n")
_FIX = "describe the work on standard input and end it with a line containing only EOF"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False


def _binary(stream: TextIO) -> BinaryIO | None:
    buf = getattr(stream, "buffer", None)
    return buf if buf is not None and hasattr(buf, "readline") else None


def read_payload(
    stream: TextIO | None,
    *,
    console: Console | None = None,
    on_terminal_hint: bool = True,
    max_bytes: int = MAX_BYTES,
) -> str:
    """The request text exactly as given, without the terminator line.

    On a terminal (and with a console) the hint and a `> ` prompt per line go to the console
    first, unless `on_terminal_hint` is false.
    """
    if stream is None:
        raise usage(
            "no request given: standard input is closed",
            "type the request, or pipe it in, ending with a line containing only EOF",
        )
    prompt = _is_tty(stream) and console is not None and on_terminal_hint
    if prompt and console is not None:
        console.say(HINT)
    binary = _binary(stream)
    chunks: list[bytes] = []
    size = 0
    while True:
        if prompt and console is not None:
            console.stream.write("> ")
            console.stream.flush()
        raw = _readline(stream, binary)
        if not raw:
            break
        if raw in _TERMINATOR_LINES:
            break
        size += len(raw)
        if size > max_bytes:
            raise usage(
                f"the request is larger than {max_bytes // 1024} KiB",
                "shorten it, or put the details in a file in the repository and refer to it",
            )
        chunks.append(raw)
    text = _decode(b"".join(chunks))
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise usage(
            f"the request holds a NUL byte on line {line}",
            "remove it (a NUL cannot be passed to Claude Code) and try again",
        )
    if not text.strip():
        raise usage("the request is empty", _FIX)
    return text


def _readline(stream: TextIO, binary: BinaryIO | None) -> bytes:
    if binary is not None:
        return binary.readline()
    try:
        line = stream.readline()
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc.start) from exc
    return line.encode("utf-8", "surrogateescape")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc.start) from exc


def _not_utf8(offset: int) -> PlanBuildError:
    return usage(
        f"the request is not valid UTF-8 (bad byte at offset {offset})",
        "save or convert the text as UTF-8 (e.g. iconv -t UTF-8) and try again",
    )


__all__ = ["HINT", "MAX_BYTES", "TERMINATOR", "read_payload"]
