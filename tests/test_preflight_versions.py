"""Preflight asks each tool for its version only when the executable changed (issue 15): the
answer is cached by the resolved executable's path, size and mtime; plugin state never is."""

from __future__ import annotations

import json
import os
from pathlib import Path

from plan_build.core import tools
from plan_build.startup import preflight
from tests.support.sessions import make_session
from tests.support.stubs import Stubs


def version_calls(stubs: Stubs, tool: str) -> int:
    return sum(1 for c in stubs.calls(tool) if c["argv"] == ["--version"])


def rows() -> dict[str, preflight.Check]:
    session, _, _ = make_session(Path.cwd())
    report = preflight.run(session, preflight.Options())
    return {c.id: c for c in report.checks}


def test_a_second_preflight_asks_no_tool_its_version(
    ready: Path, stubs: Stubs, monkeypatch
) -> None:
    monkeypatch.chdir(ready)
    first = rows()
    plugin_lists = len([c for c in stubs.calls("claude") if c["argv"][:2] == ["plugin", "list"]])
    assert version_calls(stubs, "claude") == 1
    second = rows()
    assert version_calls(stubs, "claude") == 1
    assert version_calls(stubs, "codex") == 1
    for cid in ("tool.claude", "tool.codex", "tool.coderabbit", "tool.git"):
        assert second[cid].detail == first[cid].detail
        assert second[cid].status == "pass"
    # plugin state is asked every time
    assert len([c for c in stubs.calls("claude") if c["argv"][:2] == ["plugin", "list"]]) == (
        2 * plugin_lists
    )


def test_a_reinstalled_tool_is_asked_again(ready: Path, stubs: Stubs, monkeypatch) -> None:
    monkeypatch.chdir(ready)
    rows()
    stubs.rule("claude", {"match": ["--version"], "stdout": "2.2.0 (Claude Code)\n"})
    exe = stubs.bin / "claude"
    exe.write_text(exe.read_text() + "# reinstalled\n")  # new size and mtime
    assert rows()["tool.claude"].detail == f"claude 2.2.0 ({exe})"
    assert version_calls(stubs, "claude") == 2


def test_a_failing_version_is_never_cached(ready: Path, stubs: Stubs, monkeypatch) -> None:
    monkeypatch.chdir(ready)
    stubs.rule("codex", {"match": ["--version"], "stdout": "", "exit": 1})
    assert rows()["tool.codex"].status == "warn"
    assert rows()["tool.codex"].status == "warn"
    assert version_calls(stubs, "codex") == 2


def test_a_damaged_cache_is_ignored_and_the_cache_is_safe_to_delete(
    ready: Path, stubs: Stubs, monkeypatch
) -> None:
    monkeypatch.chdir(ready)
    cache = tools.cache_file(os.environ, Path.home())
    cache.parent.mkdir(parents=True, exist_ok=True)
    for damaged in ("{not json", json.dumps(["a list"]), "x" * (tools.MAX_BYTES + 10)):
        cache.write_text(damaged)
        assert rows()["tool.claude"].status == "pass"
    calls = version_calls(stubs, "claude")
    assert calls == 3
    cache.unlink()
    assert rows()["tool.claude"].status == "pass"
    assert version_calls(stubs, "claude") == calls + 1
    assert json.loads(cache.read_text())  # written again
