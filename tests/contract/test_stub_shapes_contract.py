"""The stubs' default answers (tests/support/stubtool.py) against what the real CLIs print for
the same commands: when a pinned version changes its output, this says which stub to update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.contract.conftest import Agents, Plugins
from tests.support import stubtool

pytestmark = pytest.mark.contract


def stub_answer(tool: str, argv: list[str]) -> str:
    rule = next(r for r in stubtool.DEFAULTS[tool] if argv[: len(r["match"])] == r["match"])  # type: ignore[arg-type]
    return str(rule.get("stdout", ""))


def keys(entries: list[dict[str, Any]]) -> set[str]:
    return {k for e in entries for k in e}


@pytest.mark.parametrize("tool", ["claude", "codex"])
def test_version_lines_match(agents: Agents, tmp_path: Path, tool: str) -> None:
    real = agents.run(tool, "--version", cwd=tmp_path)
    assert real.returncode == 0
    assert stub_answer(tool, ["--version"]) == real.stdout


def test_claude_plugin_list_matches(
    agents: Agents, plugins: Plugins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as a user's default environment has it: these two also hide the telemetry built-in
    monkeypatch.delenv("DISABLE_TELEMETRY")
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
    real_text = agents.run("claude", "plugin", "list", "--json", cwd=tmp_path).stdout
    stub_text = stub_answer("claude", ["plugin", "list", "--json"])
    for text in (real_text, stub_text):  # same layout: two-space indent, final newline
        assert text == json.dumps(json.loads(text), indent=2) + "\n"
    real, stub = json.loads(real_text), json.loads(stub_text)
    builtin = [e for e in real if e["id"].endswith("@builtin")]
    assert [e for e in stub if e["id"].endswith("@builtin")] == builtin
    installed_real = [e for e in real if not e["id"].endswith("@builtin")]
    installed_stub = [e for e in stub if not e["id"].endswith("@builtin")]
    # the stub imitates marketplace installs; directory marketplaces add readFromFolder and
    # folderVersion on top
    assert keys(installed_stub) == keys(installed_real) - {"readFromFolder", "folderVersion"}
    assert {type(e["enabled"]) for e in installed_real} == {bool}


def test_codex_plugin_list_matches(agents: Agents, plugins: Plugins, tmp_path: Path) -> None:
    real_text = agents.run("codex", "plugin", "list", "--json", cwd=tmp_path).stdout
    stub_text = stub_answer("codex", ["plugin", "list", "--json"])
    for text in (real_text, stub_text):
        assert text == json.dumps(json.loads(text), indent=2) + "\n"
    real, stub = json.loads(real_text), json.loads(stub_text)
    assert set(real) == set(stub) == {"installed", "available"}
    assert keys(stub["installed"]) == keys(real["installed"])
    [entry] = real["installed"]
    assert {k: type(v) for k, v in entry.items()} == {
        k: type(v) for k, v in stub["installed"][0].items()
    }
