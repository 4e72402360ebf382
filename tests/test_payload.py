"""Reading the request: up to a line exactly `EOF` (or end of input), byte for byte."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.ui import Console
from plan_build.startup.payload import HINT, read_payload


class TtyText(io.StringIO):
    """Text typed at a terminal."""

    def isatty(self) -> bool:
        return True


def piped(data: bytes) -> io.TextIOWrapper:
    """What a real piped stdin looks like: a text wrapper over a binary buffer."""
    return io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8", newline="\n")


def console() -> Console:
    return Console(stream=io.StringIO(), fancy=False)


def test_the_request_ends_at_the_eof_line_and_the_rest_stays_unread() -> None:
    stream = piped(b"Implement pagination.\nKeep the API.\nEOF\nleft for later\n")
    assert read_payload(stream) == "Implement pagination.\nKeep the API.\n"
    assert stream.readline() == "left for later\n"


def test_end_of_input_also_ends_the_request_and_keeps_a_missing_final_newline() -> None:
    assert read_payload(piped(b"one line, no newline")) == "one line, no newline"


def test_trailing_spaces_unicode_tabs_and_crlf_are_kept_exactly() -> None:
    data = "  indented  \t\n✨ émoji → ünïcode 日本語  \r\n{{ not_jinja }} --flag\n".encode()
    assert read_payload(piped(data + b"EOF\n")).encode() == data


def test_only_a_line_that_is_exactly_eof_ends_the_request() -> None:
    text = "EOF \n EOF\nEOFX\neof\n# EOF\n"
    assert read_payload(piped(text.encode() + b"EOF")) == text


def test_eof_with_a_windows_line_end_also_ends_the_request() -> None:
    assert read_payload(piped(b"pasted\r\nEOF\r\nrest\r\n")) == "pasted\r\n"


@pytest.mark.parametrize("data", [b"", b"EOF\n", b"\n\n  \t\n", b"   \nEOF\nreal text\n"])
def test_an_empty_or_blank_request_is_a_usage_error(data: bytes) -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(piped(data))
    assert err.value.code == ExitCode.USAGE
    assert str(err.value).startswith("the request is empty")
    assert "EOF" in (err.value.fix or "")


def test_a_closed_stdin_is_a_usage_error() -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(None)
    assert err.value.code == ExitCode.USAGE
    assert "standard input is closed" in err.value.what


def test_bytes_that_are_not_utf8_are_a_usage_error_naming_the_offset() -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(piped(b"caf\xe9 au lait\nEOF\n"))
    assert err.value.code == ExitCode.USAGE
    assert err.value.what == "the request is not valid UTF-8 (bad byte at offset 3)"
    assert "iconv" in (err.value.fix or "")


def test_a_request_over_the_size_limit_is_refused_before_it_is_all_read() -> None:
    stream = piped(b"x" * 600 + b"\n" + b"y" * 600 + b"\nEOF\n")
    with pytest.raises(PlanBuildError) as err:
        read_payload(stream, max_bytes=1024)
    assert err.value.code == ExitCode.USAGE
    assert "larger than 1 KiB" in err.value.what


def test_on_a_terminal_the_user_is_told_how_to_end_the_input() -> None:
    con = console()
    assert read_payload(TtyText("Fix the login bug.\nEOF\n"), console=con) == "Fix the login bug.\n"
    shown = con.stream.getvalue()  # type: ignore[attr-defined]
    assert shown.startswith(HINT + "\n")
    assert "> " in shown


def test_the_hint_can_be_turned_off_and_is_never_shown_for_a_pipe() -> None:
    con = console()
    read_payload(TtyText("a\nEOF\n"), console=con, on_terminal_hint=False)
    read_payload(piped(b"b\nEOF\n"), console=con)
    assert con.stream.getvalue() == ""  # type: ignore[attr-defined]


def test_a_plain_text_stream_without_a_byte_buffer_works_too() -> None:
    assert read_payload(io.StringIO("plain ✓ \nEOF\n")) == "plain ✓ \n"


@given(
    st.lists(
        st.text(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
            min_size=0,
            max_size=40,
        ).filter(lambda s: "\n" not in s and "\r" not in s),
        min_size=1,
        max_size=8,
    ).filter(lambda lines: any(line.strip() for line in lines) and "EOF" not in lines)
)
def test_any_request_comes_back_byte_for_byte(lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    assert read_payload(piped(text.encode() + b"EOF\n")) == text


# --- the lead's original cases (plain text streams) ---


def test_reads_up_to_eof_and_keeps_everything_else_exactly() -> None:
    text = "Fix the {{ audit }} log  \n--yolo is not a flag here\n  ünïcode ✔\n```\nEOF \n"
    assert read_payload(io.StringIO(text + "EOF\nafter\n")) == text


def test_end_of_input_ends_the_request_too() -> None:
    assert read_payload(io.StringIO("no terminator")) == "no terminator"


@pytest.mark.parametrize("text", ["", "EOF\n", "  \n\t\nEOF\n", "\n\n"])
def test_a_blank_request_is_a_usage_error(text: str) -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(io.StringIO(text))
    assert err.value.code == ExitCode.USAGE
    assert "the request is empty" in err.value.what


def test_closed_stdin_is_a_usage_error_too() -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(None)
    assert err.value.code == ExitCode.USAGE


@given(
    st.lists(
        st.text(
            alphabet=st.characters(
                blacklist_characters="\x00\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                blacklist_categories=("Cs",),  # lone surrogates cannot come from UTF-8 input
            ),
            max_size=30,
        ).filter(lambda s: s != "EOF"),
        min_size=1,
        max_size=8,
    )
)
def test_any_request_round_trips(lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if not text.strip():
        return
    assert read_payload(io.StringIO(text + "EOF\n")) == text


def test_a_nul_byte_is_refused_naming_its_line() -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(piped(b"first line\nsecond \x00 line\nEOF\n"))
    assert err.value.code == ExitCode.USAGE
    assert "NUL byte on line 2" in err.value.what
    assert err.value.fix
