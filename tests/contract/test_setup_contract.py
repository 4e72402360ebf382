"""`plan-build setup` against the real `claude` and `codex`: from a scratch HOME with no plugin
and no marketplace to a passing plugin check, through the real plugin commands and local
marketplace directories; a rerun changes nothing; the one Codex config key is edited keeping
every other byte, and the real Codex reads the result. With no release active, setup makes
this plan-build the active release and installs it: a `claude` the user then starts directly
tells its model it has both plan-build skills."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.contract import marketplace
from tests.contract.conftest import (
    AGENTMEMORY,
    DUMMY_KEY,
    MATTPOCOCK,
    Agents,
    Plugins,
    seed_offline_start,
)
from tests.contract.fakeapis import ModelsApi
from tests.contract.tmux import Tmux
from tests.support.paths import ROOT

pytestmark = pytest.mark.contract

# with no release active, setup makes this plan-build the active release and installs it
RELEASE_STEP = (
    f"plan-build release.build --checkout {ROOT} --activate && plan-build release.install"
)
SKILLS_HEADER = "The following skills are available for use with the Skill tool:"
PLUGIN_ROWS = (
    "claude.plugin.mattpocock-skills",
    "claude.plugin.agentmemory",
    "codex.plugin.agentmemory",
)


def rows(cli: Any, cwd: Path) -> dict[str, dict[str, Any]]:
    r = cli("preflight", "--json", cwd=cwd)
    return {c["id"]: c for c in json.loads(r.stdout)["checks"]}


@pytest.fixture
def mirrors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The two marketplaces as local directories, named to setup as mirrors (environment)."""
    root = tmp_path / "mirrors"
    am = marketplace.build(root, AGENTMEMORY[1], AGENTMEMORY[0], AGENTMEMORY[2], codex=True)
    mp = marketplace.build(root, MATTPOCOCK[1], MATTPOCOCK[0], MATTPOCOCK[2], codex=False)
    monkeypatch.setenv("PLAN_BUILD_MARKETPLACE_AGENTMEMORY", str(am))
    monkeypatch.setenv("PLAN_BUILD_MARKETPLACE_MATTPOCOCK", str(mp))
    return {"agentmemory": am, "mattpocock": mp}


def test_setup_takes_a_scratch_home_to_passing_plugin_checks_and_a_rerun_changes_nothing(
    cli: Any, ready: Path, agents: Agents, mirrors: dict[str, Path]
) -> None:
    assert agents.json("claude", "plugin", "marketplace", "list", "--json", cwd=ready) == []
    before = rows(cli, ready)
    assert [before[r]["status"] for r in PLUGIN_ROWS] == ["fail", "fail", "fail"]

    r = cli("setup", "--yes", "--json", cwd=ready, env={"NO_COLOR": "1"}, timeout=600)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert [s["command"] for s in data["plan"]] == [
        f"claude plugin marketplace add {mirrors['mattpocock']} --scope user --json",
        "claude plugin install mattpocock-skills@mattpocock --scope user --json",
        f"claude plugin marketplace add {mirrors['agentmemory']} --scope user --json",
        "claude plugin install agentmemory@agentmemory --scope user --json",
        f"codex plugin marketplace add {mirrors['agentmemory']} --json",
        "codex plugin add agentmemory@agentmemory --json",
        RELEASE_STEP,
    ]
    assert [o["status"] for o in data["outcomes"]] == ["ok"] * 7
    assert data["report"]["ok"] is True
    after = rows(cli, ready)
    assert [after[r]["status"] for r in PLUGIN_ROWS] == ["pass", "pass", "pass"]
    listed = agents.json("claude", "plugin", "list", "--json", cwd=ready)
    assert {e["id"]: e["scope"] for e in listed if not e["id"].endswith("@builtin")} == {
        "mattpocock-skills@mattpocock": "user",
        "agentmemory@agentmemory": "user",
    }

    files = [agents.claude_dir / "settings.json", agents.codex_dir / "config.toml"]
    kept = [p.read_bytes() for p in files]
    again = cli("setup", "--yes", "--json", cwd=ready, timeout=300)
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["plan"] == []
    assert "setup: nothing to do" in again.stderr
    assert [p.read_bytes() for p in files] == kept


def test_a_disabled_codex_plugin_is_enabled_in_a_commented_config_keeping_every_other_byte(
    cli: Any, ready: Path, agents: Agents, mirrors: dict[str, Path]
) -> None:
    agents.json(
        "codex", "plugin", "marketplace", "add", str(mirrors["agentmemory"]), "--json", cwd=ready
    )
    agents.json("codex", "plugin", "add", "agentmemory@agentmemory", "--json", cwd=ready)
    config = agents.codex_dir / "config.toml"
    written = config.read_text()
    section = '[plugins."agentmemory@agentmemory"]\nenabled = true\n'
    assert section in written
    mine = (
        "# my Codex settings, kept by hand\n"
        'model = "o3"  # the one I like\n\n'
        "[profiles.review]\n"
        "model_reasoning_effort = 'high'   # reviews think longer\n\n"
        + written.replace(section, section.replace("true", "false  # off while debugging"))
        + '\n[shell_environment_policy]\ninherit = "core"\n'
    )
    config.write_text(mine)
    assert "installed, disabled" in agents.run("codex", "plugin", "list", cwd=ready).stdout

    r = cli("setup", "--yes", "--mode", "architect", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    assert config.read_text() == mine.replace(
        "enabled = false  # off while debugging", "enabled = true  # off while debugging"
    )
    assert "installed, enabled" in agents.run("codex", "plugin", "list", cwd=ready).stdout
    assert rows(cli, ready)["codex.plugin.agentmemory"]["status"] == "pass"


def test_a_disabled_claude_plugin_is_enabled_and_a_missing_one_joins_the_project_scope(
    cli: Any, ready: Path, agents: Agents, plugins: Plugins
) -> None:
    # the user keeps plugins for this project in project scope: agentmemory there, disabled
    for plugin in ("agentmemory@agentmemory", "mattpocock-skills@mattpocock"):
        agents.json("claude", "plugin", "uninstall", plugin, "--json", cwd=ready)
    agents.json(
        "claude",
        "plugin",
        "install",
        "agentmemory@agentmemory",
        "-s",
        "project",
        "--json",
        cwd=ready,
    )
    agents.json(
        "claude",
        "plugin",
        "disable",
        "agentmemory@agentmemory",
        "-s",
        "project",
        "--json",
        cwd=ready,
    )
    r = cli("setup", "--yes", "--json", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert [s["command"] for s in data["plan"]] == [
        "claude plugin install mattpocock-skills@mattpocock --scope project --json",
        "claude plugin enable agentmemory@agentmemory --scope project --json",
        RELEASE_STEP,
    ]
    assert data["plan"][1]["changes"] == [str(ready / ".claude" / "settings.json")]
    listed = agents.json("claude", "plugin", "list", "--json", cwd=ready)
    mine = {e["id"]: (e["scope"], e["enabled"]) for e in listed if "@builtin" not in e["id"]}
    assert mine == {
        "agentmemory@agentmemory": ("project", True),
        "mattpocock-skills@mattpocock": ("project", True),
    }


def skills_claude_lists(api: ModelsApi) -> dict[str, str]:
    """The skills Claude Code told its model it has: the `- name: description` lines under its
    skills header, in the messages of the last request to /v1/messages (whatever the role)."""
    [last] = [r for r in api.requests if r.path.startswith("/v1/messages")][-1:]
    texts = []
    for message in last.body.get("messages", []):
        content = message.get("content")
        blocks = [{"text": content}] if isinstance(content, str) else content or []
        texts += [b.get("text", "") for b in blocks if isinstance(b, dict)]
    [text] = [t for t in texts if SKILLS_HEADER in t][:1]
    lines = text.split(SKILLS_HEADER, 1)[1].strip("\n").split("\n\n", 1)[0].splitlines()
    return dict(line[2:].split(": ", 1) for line in lines if line.startswith("- "))


def front_matter(path: Path) -> dict[str, str]:
    head = path.read_text(encoding="utf-8").split("---\n", 2)[1]
    return dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)


def test_after_setup_a_claude_started_directly_has_both_plan_build_skills(  # noqa: PLR0917
    cli: Any,
    ready: Path,
    agents: Agents,
    mirrors: dict[str, Path],
    tmux: Tmux,
    models_api: ModelsApi,
) -> None:
    assert not (agents.claude_dir / "skills").exists()
    r = cli("setup", "--yes", "--json", cwd=ready, env={"NO_COLOR": "1"}, timeout=600)
    assert r.code == 0, r.stderr
    outcomes = {o["id"]: o["status"] for o in json.loads(r.stdout)["outcomes"]}
    assert outcomes["release"] == "ok"

    # the user starts claude themselves, in their project, with no plan-build prompt
    seed_offline_start(agents.claude_dir, ready.resolve(), DUMMY_KEY)
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "ANTHROPIC_BASE_URL": models_api.origin,
        "NO_COLOR": "1",
    }
    tmux.start(["claude"], cwd=ready, env=env)
    tmux.wait_text("❯", 60)
    tmux.type("hello")
    tmux.wait_text("API Error: 400", 60)
    listed = skills_claude_lists(models_api)
    tmux.command("/exit", 30)
    for name, skill in (("plan-build", "SKILL.md"), ("plan-build-architect", "ARCHITECT.md")):
        wanted = front_matter(ROOT / "skills" / skill)
        assert wanted["name"] == name
        assert listed[name] == wanted["description"], listed

    again = cli("setup", "--yes", "--json", cwd=ready, timeout=300)
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["plan"] == []
