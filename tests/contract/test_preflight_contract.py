"""Preflight against the real `claude` and `codex`: plugins installed from local marketplaces
through the real plugin commands, then `plan-build preflight` reads the real `plugin list --json`
output. A user sees the same rows and fixes as with the stubs, and the fixes really work."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from plan_build.startup.plugins import CLAUDE_INSTALL, CODEX_INSTALL
from tests.contract.conftest import Agents, Plugins
from tests.support.gitcmd import git

pytestmark = pytest.mark.contract

CLAUDE_PLUGINS = {
    "agentmemory@agentmemory": ("claude.plugin.agentmemory", "0.9.29", True),
    "mattpocock-skills@mattpocock": ("claude.plugin.mattpocock-skills", "1.2.0", False),
}
CODEX_ROW = "codex.plugin.agentmemory"


def preflight(cli: Any, cwd: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    r = cli("preflight", "--json", *args, cwd=cwd)
    assert r.code in (0, 3), r.stderr
    return r.code, {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def test_enabled_plugins_pass_with_the_real_clis(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins
) -> None:
    code, rows = preflight(cli, ready)
    assert code == 0, rows
    assert rows["tool.claude"]["detail"] == f"claude 2.1.332 ({agents.clis.path('claude')})"
    assert rows["tool.codex"]["detail"] == f"codex 0.171.0 ({agents.clis.path('codex')})"
    for plugin, (row, version, degradable) in CLAUDE_PLUGINS.items():
        assert rows[row]["status"] == "pass"
        assert rows[row]["detail"] == f"{plugin} {version} enabled"
        assert rows[row]["degradable"] is degradable
    assert rows[CODEX_ROW]["status"] == "pass"
    assert rows[CODEX_ROW]["detail"] == "agentmemory@agentmemory 0.9.29 enabled"
    # the real list also carries Claude's built-in plugins; they are not rows of ours
    listed = agents.json("claude", "plugin", "list", "--json", cwd=ready)
    assert any(e["id"].endswith("@builtin") for e in listed)
    assert not any("builtin" in row for row in rows)


@pytest.mark.parametrize("plugin", sorted(CLAUDE_PLUGINS))
def test_a_disabled_claude_plugin_is_reported_and_its_fix_works(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins, plugin: str
) -> None:
    row, _, degradable = CLAUDE_PLUGINS[plugin]
    answer = agents.json("claude", "plugin", "disable", plugin, "--json", cwd=ready)
    assert answer["outcome"] == "ok"

    code, rows = preflight(cli, ready)
    assert code == 3
    assert rows[row]["status"] == "fail"
    assert rows[row]["detail"] == f"{plugin} is installed but disabled"
    assert rows[row]["remediation"] == f"claude plugin enable {plugin}"
    assert rows[row]["degradable"] is degradable
    [other] = [r for p, (r, _, _) in CLAUDE_PLUGINS.items() if p != plugin]
    assert rows[other]["status"] == "pass"

    human = cli("preflight", cwd=ready, env={"NO_COLOR": "1"})
    assert f"{plugin} is installed but disabled" in human.stderr
    assert f"-> claude plugin enable {plugin}" in human.stderr

    fix = agents.run(*shlex.split(rows[row]["remediation"]), cwd=ready)
    assert fix.returncode == 0, fix.stderr
    code, rows = preflight(cli, ready)
    assert code == 0, rows[row]


@pytest.mark.parametrize("plugin", sorted(CLAUDE_PLUGINS))
def test_a_missing_claude_plugin_is_reported_even_if_settings_still_enable_it(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins, plugin: str
) -> None:
    row, _, _ = CLAUDE_PLUGINS[plugin]
    answer = agents.json("claude", "plugin", "uninstall", plugin, "--json", cwd=ready)
    assert answer["outcome"] == "ok"
    # `enable` of a plugin that is not installed still says ok and writes enabledPlugins:
    # only `plugin list` tells the truth
    agents.run("claude", "plugin", "enable", plugin, cwd=ready)
    settings = json.loads((agents.claude_dir / "settings.json").read_text())
    assert settings["enabledPlugins"][plugin] is True

    code, rows = preflight(cli, ready)
    assert code == 3
    assert rows[row]["status"] == "fail"
    assert rows[row]["detail"] == f"{plugin} is not installed"
    assert rows[row]["remediation"] == CLAUDE_INSTALL[plugin]


def test_architect_mode_does_not_need_mattpocock_skills(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins
) -> None:
    agents.json(
        "claude", "plugin", "uninstall", "mattpocock-skills@mattpocock", "--json", cwd=ready
    )
    code, rows = preflight(cli, ready, "--mode", "architect")
    assert code == 0, rows
    assert "claude.plugin.mattpocock-skills" not in rows
    code, rows = preflight(cli, ready)
    assert code == 3


def test_a_plugin_installed_for_another_project_does_not_count_here(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins, tmp_path: Path
) -> None:
    plugin = "mattpocock-skills@mattpocock"
    row = CLAUDE_PLUGINS[plugin][0]
    other = tmp_path / "other-project"
    other.mkdir()
    git(other, "init", "-q")
    agents.json("claude", "plugin", "uninstall", plugin, "--json", cwd=ready)
    answer = agents.json(
        "claude", "plugin", "install", plugin, "-s", "project", "--json", cwd=other
    )
    assert answer["scope"] == "project"
    # the real list, asked from this repository, still shows the other project's install
    listed = agents.json("claude", "plugin", "list", "--json", cwd=ready)
    [entry] = [e for e in listed if e["id"] == plugin]
    assert entry["scope"] == "project"
    assert Path(entry["projectPath"]).resolve() == other.resolve()

    _, rows = preflight(cli, ready)
    assert rows[row]["status"] == "fail"
    assert rows[row]["detail"] == f"{plugin} is not installed"
    _, rows = preflight(cli, other)
    assert rows[row]["status"] == "pass"


def test_a_disabled_codex_plugin_is_reported_and_its_fix_works(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins
) -> None:
    config = agents.codex_dir / "config.toml"
    text = config.read_text()
    section = '[plugins."agentmemory@agentmemory"]\nenabled = true'
    assert section in text  # how `codex plugin add` records it (Codex has no enable command)
    config.write_text(text.replace(section, section.replace("true", "false")))

    code, rows = preflight(cli, ready)
    assert code == 3
    assert rows[CODEX_ROW]["status"] == "fail"
    assert rows[CODEX_ROW]["detail"] == "agentmemory@agentmemory is installed but disabled"
    assert rows[CODEX_ROW]["remediation"] == (
        f'set enabled = true under [plugins."agentmemory@agentmemory"] in {config}'
    )
    assert rows[CODEX_ROW]["degradable"] is True
    listed = agents.run("codex", "plugin", "list", cwd=ready)
    assert "installed, disabled" in listed.stdout

    config.write_text(config.read_text().replace("enabled = false", "enabled = true"))
    code, rows = preflight(cli, ready)
    assert code == 0, rows[CODEX_ROW]


def test_a_missing_codex_plugin_is_reported(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins
) -> None:
    answer = agents.json(
        "codex", "plugin", "remove", "agentmemory@agentmemory", "--json", cwd=ready
    )
    assert answer["pluginId"] == "agentmemory@agentmemory"
    code, rows = preflight(cli, ready)
    assert code == 3
    assert rows[CODEX_ROW]["status"] == "fail"
    assert rows[CODEX_ROW]["detail"] == "agentmemory@agentmemory is not installed"
    assert rows[CODEX_ROW]["remediation"] == CODEX_INSTALL


def test_safe_mode_through_the_real_env_var_is_reported(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    help_text = agents.run("claude", "--help", cwd=ready).stdout
    assert "CLAUDE_CODE_SAFE_MODE=1" in " ".join(help_text.split())
    monkeypatch.setenv("CLAUDE_CODE_SAFE_MODE", "1")
    # safe mode does not show in the plugin list (plugins still read "enabled"), which is why
    # plan-build checks the variable itself
    listed = agents.json("claude", "plugin", "list", "--json", cwd=ready)
    assert next(e for e in listed if e["id"] == "agentmemory@agentmemory")["enabled"] is True

    code, rows = preflight(cli, ready)
    assert code == 3
    assert rows["claude.safe_mode"]["status"] == "fail"
    assert rows["claude.safe_mode"]["detail"] == (
        "CLAUDE_CODE_SAFE_MODE=1 turns off Claude Code's plugins and skills"
    )
    assert rows["claude.safe_mode"]["remediation"] == "unset CLAUDE_CODE_SAFE_MODE"


def test_yolo_as_root_needs_is_sandbox_as_the_real_claude_does(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins
) -> None:
    refused = "--dangerously-skip-permissions cannot be used with root/sudo privileges"
    dry = cli("plan", "--dry-run", "--yolo", cwd=ready, input="x\nEOF\n")
    real = agents.run("claude", "--dangerously-skip-permissions", "--", "hello", cwd=ready)
    if os.geteuid() == 0:
        assert real.returncode == 1
        assert refused in real.stdout + real.stderr
        assert dry.code == 3
        assert "would not launch: preflight failed: yolo.root" in dry.stdout
        assert "Claude Code refuses --dangerously-skip-permissions for root" in dry.stderr
        assert "set IS_SANDBOX=1" in dry.stderr
    else:
        assert refused not in real.stdout + real.stderr
        assert dry.code == 0, dry.stderr
    sandboxed = cli(
        "plan", "--dry-run", "--yolo", cwd=ready, input="x\nEOF\n", env={"IS_SANDBOX": "1"}
    )
    assert sandboxed.code == 0, sandboxed.stderr
