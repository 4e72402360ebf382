"""The one tool probe (plan_build.core.tools): where a tool is, what its first line says, which
version that is, and the version cache that spares a second launch. Tools are stubs on PATH."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from plan_build.core import proc, tools
from tests.support.stubs import Stubs


def version_calls(stubs: Stubs, tool: str) -> int:
    return sum(1 for c in stubs.calls(tool) if c["argv"] == ["--version"])


def test_the_answer_names_the_path_the_first_line_and_the_version(
    stubs: Stubs, private_home: Path
) -> None:
    stubs.rule("codex", {"match": ["--version"], "stdout": "codex-cli 0.171.0\nmore\n"})
    a = tools.version("codex", env=os.environ, home=private_home, timeout=10)
    assert (a.path, a.line, a.version, a.numbers) == (
        str(stubs.bin / "codex"),
        "codex-cli 0.171.0",
        "0.171.0",
        (0, 171, 0),
    )
    assert a.ok
    assert not a.cached


def test_a_second_question_is_answered_from_the_cache(stubs: Stubs, private_home: Path) -> None:
    first = tools.version("claude", env=os.environ, home=private_home, timeout=10)
    second = tools.version("claude", env=os.environ, home=private_home, timeout=10)
    assert second.cached
    assert (second.line, second.version) == (first.line, first.version)
    assert version_calls(stubs, "claude") == 1


def test_a_tool_not_on_path_is_missing_and_nothing_starts(stubs: Stubs, private_home: Path) -> None:
    env = dict(os.environ, PATH=str(private_home))
    a = tools.version("claude", env=env, home=private_home, timeout=10)
    assert (a.path, a.problem, a.version) == (None, "missing", None)
    assert version_calls(stubs, "claude") == 0


def test_a_failing_or_versionless_answer_has_no_version(stubs: Stubs, private_home: Path) -> None:
    stubs.rule("codex", {"match": ["--version"], "stdout": "0.171.0\n", "exit": 2})
    stubs.rule("coderabbit", {"match": ["--version"], "stdout": "unknown\n"})
    failed = tools.version("codex", env=os.environ, home=private_home, timeout=10)
    assert (failed.ok, failed.returncode, failed.version) == (False, 2, None)
    blank = tools.version("coderabbit", env=os.environ, home=private_home, timeout=10)
    assert (blank.ok, blank.line, blank.version) == (True, "unknown", None)


def test_a_hanging_tool_times_out_and_is_not_cached(stubs: Stubs, private_home: Path) -> None:
    stubs.rule("codex", {"match": ["--version"], "sleep": 30})
    a = tools.version("codex", env=os.environ, home=private_home, timeout=0.5)
    assert (a.problem, a.path) == ("timeout", str(stubs.bin / "codex"))
    assert tools.lookup(os.environ, private_home, str(stubs.bin / "codex")) is None


def test_a_cancelled_probe_stops_the_tool_and_says_so(stubs: Stubs, private_home: Path) -> None:
    stubs.rule("coderabbit", {"match": ["review", "--help"], "sleep": 30})
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(proc.CommandCancelled):
        tools.ask("coderabbit", ["review", "--help"], env=os.environ, timeout=20, cancel=cancel)


def test_several_tools_are_asked_at_once(stubs: Stubs, private_home: Path) -> None:
    found = tools.versions(["claude", "codex"], env=os.environ, home=private_home, timeout=10)
    assert [found["claude"].version, found["codex"].version] == ["2.1.332", "0.171.0"]


def test_a_tool_that_gave_no_answer_is_one_failing_row(stubs: Stubs, private_home: Path) -> None:
    stubs.rule("codex", {"match": ["--version"], "sleep": 30})
    hung = tools.version("codex", env=os.environ, home=private_home, timeout=0.5)
    row = tools.unanswered("tool.codex", hung, timeout=0.5, install="npm i -g @openai/codex")
    assert row is not None
    assert (row.status, row.detail) == ("fail", "codex --version did not answer in 0.5s")
    gone = tools.Answer("codex", None, problem="missing")
    row = tools.unanswered("tool.codex", gone, timeout=0.5, install="npm i -g @openai/codex")
    assert row is not None
    assert (row.detail, row.remediation) == ("codex is not on PATH", "npm i -g @openai/codex")
    answered = tools.version("claude", env=os.environ, home=private_home, timeout=10)
    assert tools.unanswered("tool.claude", answered, timeout=10, install=None) is None
