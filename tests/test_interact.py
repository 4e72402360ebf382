"""Questions: first letter or full word, empty means the safe default, no terminal never
approves."""

from __future__ import annotations

import io

import pytest

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.interact import Choice, TerminalInteraction, render_choices
from tests.support.sessions import TTYText

CHOICES = [Choice("r", "retry"), Choice("d", "continue degraded"), Choice("s", "stop")]


def terminal(answers: str) -> tuple[TerminalInteraction, io.StringIO]:
    err = TTYText()
    return TerminalInteraction(stdin=TTYText(answers), stderr=err), err


def test_choices_show_the_key_and_the_default() -> None:
    assert render_choices(CHOICES, "s") == "[r]etry · continue [d]egraded · [s]top (default)"


@pytest.mark.parametrize(
    ("typed", "key"), [("d\n", "d"), ("D\n", "d"), ("retry\n", "r"), ("\n", "s"), ("", "s")]
)
def test_answers(typed: str, key: str) -> None:
    ui, _ = terminal(typed)
    assert ui.choose("Memory continuity is unavailable.", CHOICES, "s") == key


def test_an_unknown_answer_asks_again() -> None:
    ui, err = terminal("maybe\ny\n")
    assert ui.confirm("Write it?") is True
    assert "answer with one of: y, n" in err.getvalue()


def test_without_a_terminal_a_gate_stops_with_exit_4() -> None:
    ui = TerminalInteraction(stdin=io.StringIO("y\n"), stderr=io.StringIO())
    with pytest.raises(PlanBuildError) as err:
        ui.confirm("Write it?")
    assert err.value.code == ExitCode.APPROVAL
