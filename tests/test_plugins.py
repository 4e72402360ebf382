"""Plugin state from `claude plugin list --json` and `codex plugin list --json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plan_build.startup import plugins
from tests.conftest import Stubs
from tests.support.stubtool import CLAUDE_PLUGINS, CODEX_PLUGINS

IDS = ["mattpocock-skills@mattpocock", "agentmemory@agentmemory"]


def claude(repo: Path, env: dict[str, str] | None = None):
    import os

    return {c.id: c for c in plugins.claude_checks(IDS, env or dict(os.environ), repo)}


def codex(repo: Path):
    import os

    return plugins.codex_check("agentmemory@agentmemory", dict(os.environ), repo)


def test_enabled_plugins_pass_and_builtins_are_ignored(stubs: Stubs, repo: Path) -> None:
    checks = claude(repo)
    assert checks["claude.plugin.mattpocock-skills"].status == "pass"
    assert checks["claude.plugin.agentmemory"].detail == "agentmemory@agentmemory 0.9.29 enabled"
    assert not checks["claude.plugin.mattpocock-skills"].degradable
    assert checks["claude.plugin.agentmemory"].degradable
    assert codex(repo).status == "pass"
    assert [c["argv"] for c in stubs.calls("claude")] == [["plugin", "list", "--json"]]


def test_disabled_and_missing_claude_plugins(stubs: Stubs, repo: Path) -> None:
    listed = [
        dict(p, enabled=False) if p["id"].startswith("agentmemory") else p
        for p in CLAUDE_PLUGINS
        if not p["id"].startswith("mattpocock")
    ]
    stubs.rule("claude", {"match": ["plugin", "list", "--json"], "stdout": json.dumps(listed)})
    checks = claude(repo)
    am = checks["claude.plugin.agentmemory"]
    assert (am.status, am.detail) == ("fail", "agentmemory@agentmemory is installed but disabled")
    assert am.remediation == "claude plugin enable agentmemory@agentmemory"
    mp = checks["claude.plugin.mattpocock-skills"]
    assert mp.detail == "mattpocock-skills@mattpocock is not installed"
    assert "claude plugin install mattpocock-skills@mattpocock" in (mp.remediation or "")


def test_project_scoped_plugin_of_another_project_does_not_count(stubs: Stubs, repo: Path) -> None:
    listed = [dict(p, scope="project", projectPath="/elsewhere") for p in CLAUDE_PLUGINS]
    stubs.rule("claude", {"match": ["plugin", "list", "--json"], "stdout": json.dumps(listed)})
    assert claude(repo)["claude.plugin.agentmemory"].detail.endswith("is not installed")
    listed = [dict(p, scope="project", projectPath=str(repo)) for p in CLAUDE_PLUGINS]
    stubs.rule("claude", {"match": ["plugin", "list", "--json"], "stdout": json.dumps(listed)})
    assert claude(repo)["claude.plugin.agentmemory"].status == "pass"


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ({"stdout": "Installed plugins:\n  ❯ agentmemory"}, "printed something that is not JSON"),
        ({"stdout": '{"unexpected": true}'}, "did not print a list of plugins"),
        (
            {"stdout": "", "stderr": "✘ Failed to load settings\n", "exit": 1},
            "exited 1: ✘ Failed to load settings",
        ),
    ],
)
def test_broken_claude_output_fails_every_claude_plugin_check(
    stubs: Stubs, repo: Path, rule, words
) -> None:
    stubs.rule("claude", {"match": ["plugin", "list", "--json"], **rule})
    checks = claude(repo)
    for check in checks.values():
        assert check.status == "fail"
        assert words in check.detail


def test_a_hanging_cli_times_out(stubs: Stubs, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "LIST_TIMEOUT", 0.5)
    stubs.rule("codex", {"match": ["plugin", "list", "--json"], "sleep": 30})
    check = codex(repo)
    assert check.status == "fail"
    assert "did not answer within 0.5s" in check.detail


def test_disabled_codex_plugin_names_the_config_edit(stubs: Stubs, repo: Path) -> None:
    data = json.loads(json.dumps(CODEX_PLUGINS))
    data["installed"][0]["enabled"] = False
    stubs.rule("codex", {"match": ["plugin", "list", "--json"], "stdout": json.dumps(data)})
    check = codex(repo)
    assert check.detail == "agentmemory@agentmemory is installed but disabled"
    assert check.remediation == (
        'set enabled = true under [plugins."agentmemory@agentmemory"] in ~/.codex/config.toml'
    )
    stubs.rule(
        "codex",
        {"match": ["plugin", "list", "--json"], "stdout": '{"installed": [], "available": []}'},
    )
    assert "codex plugin add agentmemory@agentmemory" in (codex(repo).remediation or "")
