"""Plugin state from `claude plugin list --json` and `codex plugin list --json`.

Each test fakes one process's output with pytest-subprocess (`fp`): nothing else may run (an
unregistered command fails the test). The hanging CLI keeps a stub executable on PATH, because
what it proves is the real kill of a real process tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plan_build.startup import plugins
from tests.support.stubs import Stubs
from tests.support.stubtool import CLAUDE_PLUGINS, CODEX_PLUGINS

IDS = ["mattpocock-skills@mattpocock", "agentmemory@agentmemory"]


LIST = ["plugin", "list", "--json"]


def lists(fp: Any, tool: str, stdout: str, *, stderr: str = "", returncode: int = 0) -> None:
    """`tool plugin list --json` answers this, once."""
    fp.register([tool, *LIST], stdout=stdout, stderr=stderr, returncode=returncode)


def claude(repo: Path, env: dict[str, str] | None = None):
    import os

    return {c.id: c for c in plugins.claude_checks(IDS, env or dict(os.environ), repo)}


def codex(repo: Path):
    import os

    return plugins.codex_check("agentmemory@agentmemory", dict(os.environ), repo)


def test_enabled_plugins_pass_and_builtins_are_ignored(fp: Any, tmp_path: Path) -> None:
    lists(fp, "claude", json.dumps(CLAUDE_PLUGINS))
    lists(fp, "codex", json.dumps(CODEX_PLUGINS))
    checks = claude(tmp_path)
    assert checks["claude.plugin.mattpocock-skills"].status == "pass"
    assert checks["claude.plugin.agentmemory"].detail == "agentmemory@agentmemory 0.9.29 enabled"
    assert not checks["claude.plugin.mattpocock-skills"].degradable
    assert checks["claude.plugin.agentmemory"].degradable
    assert codex(tmp_path).status == "pass"
    assert fp.call_count(["claude", *LIST]) == 1  # one listing serves every Claude plugin


def test_disabled_and_missing_claude_plugins(fp: Any, tmp_path: Path) -> None:
    listed = [
        dict(p, enabled=False) if p["id"].startswith("agentmemory") else p
        for p in CLAUDE_PLUGINS
        if not p["id"].startswith("mattpocock")
    ]
    lists(fp, "claude", json.dumps(listed))
    checks = claude(tmp_path)
    am = checks["claude.plugin.agentmemory"]
    assert (am.status, am.detail) == ("fail", "agentmemory@agentmemory is installed but disabled")
    assert am.remediation == "claude plugin enable agentmemory@agentmemory"
    mp = checks["claude.plugin.mattpocock-skills"]
    assert mp.detail == "mattpocock-skills@mattpocock is not installed"
    assert "claude plugin install mattpocock-skills@mattpocock" in (mp.remediation or "")


def test_project_scoped_plugin_of_another_project_does_not_count(fp: Any, tmp_path: Path) -> None:
    listed = [dict(p, scope="project", projectPath="/elsewhere") for p in CLAUDE_PLUGINS]
    lists(fp, "claude", json.dumps(listed))
    assert claude(tmp_path)["claude.plugin.agentmemory"].detail.endswith("is not installed")
    listed = [dict(p, scope="project", projectPath=str(tmp_path)) for p in CLAUDE_PLUGINS]
    lists(fp, "claude", json.dumps(listed))
    assert claude(tmp_path)["claude.plugin.agentmemory"].status == "pass"


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"stdout": "Installed plugins:\n  ❯ agentmemory"}, "printed something that is not JSON"),
        ({"stdout": '{"unexpected": true}'}, "did not print a list of plugins"),
        (
            {"stdout": "", "stderr": "✘ Failed to load settings\n", "returncode": 1},
            "exited 1: ✘ Failed to load settings",
        ),
    ],
)
def test_broken_claude_output_fails_every_claude_plugin_check(
    fp: Any, tmp_path: Path, answer: dict[str, Any], words: str
) -> None:
    lists(fp, "claude", **answer)
    checks = claude(tmp_path)
    for check in checks.values():
        assert check.status == "fail"
        assert words in check.detail


def test_a_hanging_cli_times_out(stubs: Stubs, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "LIST_TIMEOUT", 0.5)
    stubs.rule("codex", {"match": ["plugin", "list", "--json"], "sleep": 30})
    check = codex(repo)
    assert check.status == "fail"
    assert "did not answer within 0.5s" in check.detail


def test_disabled_codex_plugin_names_the_config_edit(fp: Any, tmp_path: Path) -> None:
    data = json.loads(json.dumps(CODEX_PLUGINS))
    data["installed"][0]["enabled"] = False
    lists(fp, "codex", json.dumps(data))
    check = codex(tmp_path)
    assert check.detail == "agentmemory@agentmemory is installed but disabled"
    assert check.remediation == (
        'set enabled = true under [plugins."agentmemory@agentmemory"] in ~/.codex/config.toml'
    )
    lists(fp, "codex", '{"installed": [], "available": []}')
    assert "codex plugin add agentmemory@agentmemory" in (codex(tmp_path).remediation or "")


def test_a_plugin_list_nested_too_deep_is_not_json_not_a_crash(fp: Any, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    lists(fp, "claude", deep)
    rows = claude(tmp_path)
    assert all(c.status == "fail" for c in rows.values())
    assert all("not JSON" in c.detail for c in rows.values())
