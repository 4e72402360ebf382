"""What plan-build shows of a reviewer's, an agent's or a task file's text: control characters
escaped on every screen line, credentials withheld (issue 36 items 2 and 3, ADR 0194/0195).

Real entry point, stub `codex` on PATH (tests/support/reviewkit), hostile texts planted where a
reviewer or a TASKS.md author would put them.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from plan_build.core.ui import Console, printable, printable_lines
from tests.support.dispatching import PLAN as TASKS_PLAN
from tests.support.dispatching import make_plan
from tests.support.reviewkit import PLAN, claude_session, start_plan_review

# C0 (but the newline), DEL, C1 (CSI U+009B among them): none may reach a terminal raw
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
TITLE_AND_CLEAR = "\x1b]0;TITLE\x07\x1b[2J"
PASSWORD = 'password = "hunter2hunter2"'
AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HOSTILE_REVIEW = (
    "## Findings\n\n"
    f"[HIGH-1] the title is reset {TITLE_AND_CLEAR} and \x9b31m red\n\n"
    f"[MEDIUM-1] the config keeps {PASSWORD}\n\n"
    f"[LOW-1] the key {AKIA} and the token {GHP} are in app.py\n\n"
    "## Summary\nCritical: 0\nHigh: 1\nMedium: 1\nLow: 1\n"
)


@given(text=hs.text())
@settings(max_examples=300)
def test_no_control_character_survives_the_one_escaping(text: str) -> None:
    assert not CONTROL.search(printable(text))
    assert not CONTROL.search(printable_lines(text))
    assert printable_lines(text).count("\n") == text.count("\n")  # lines stay lines


@given(text=hs.text(alphabet=hs.characters(codec="utf-8")))
@settings(max_examples=200)
def test_every_console_line_is_escaped(text: str) -> None:
    out = io.StringIO()
    Console(stream=out, fancy=False).say(f"finding: {text}")
    assert not CONTROL.search(out.getvalue().removesuffix("\n").replace("\n", ""))


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    return repo


def _clean(stream: str) -> None:
    assert not CONTROL.search(stream.replace("\n", "")), repr(stream)
    for secret in ("hunter2hunter2", AKIA, GHP):
        assert secret not in stream


def test_review_screens_escape_and_withhold_a_hostile_finding(cli, stubs, project: Path) -> None:
    assert start_plan_review(cli, stubs, project, HOSTILE_REVIEW).exists()
    for command in ("review.summary", "review.status"):
        r = cli(command, cwd=project)
        assert r.code == 0, r.stderr
        _clean(r.stderr)
    summary = cli("review.summary", cwd=project).stderr
    assert "\\x1b]0;TITLE\\x07\\x1b[2J" in summary  # shown, escaped
    assert "looks like a credential (Secret Keyword)" in summary
    assert "looks like a credential (AWS Access Key)" in summary
    data = json.loads(cli("review.summary", "--json", cwd=project).stdout)
    as_data = json.dumps(data)  # data, not a screen: control characters stay JSON escapes
    for secret in ("hunter2hunter2", AKIA, GHP):
        assert secret not in as_data


def test_the_round_itself_shows_its_findings_escaped_and_withheld(
    cli, stubs, project: Path
) -> None:
    from tests.support.reviewkit import codex_rule

    stubs.rule("codex", codex_rule(HOSTILE_REVIEW))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 0, r.stderr
    assert "[HIGH-1]" in r.stderr
    _clean(r.stderr)


def test_a_task_title_with_control_sequences_is_shown_escaped(repo: Path, cli) -> None:
    text = TASKS_PLAN.replace("Add the audit log model", f"Add {TITLE_AND_CLEAR} model")
    assert text != TASKS_PLAN
    make_plan(repo, text=text)
    r = cli("tasks", cwd=repo)
    assert "\\x1b]0;TITLE" in r.stderr
    assert not CONTROL.search(r.stderr.replace("\n", ""))
