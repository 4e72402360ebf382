"""The request: read up to a line exactly EOF, byte for byte; blank is a usage error."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_build.errors import ExitCode, PlanBuildError
from plan_build.payload import read_payload


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


def test_closed_stdin_is_a_usage_error() -> None:
    with pytest.raises(PlanBuildError) as err:
        read_payload(None)
    assert err.value.code == ExitCode.USAGE


@given(
    st.lists(
        st.text(
            alphabet=st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
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
