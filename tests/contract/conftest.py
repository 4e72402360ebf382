"""Fixtures for the contract suite: the pinned real `claude` and `codex` first on PATH, their
config directories inside the test's private HOME, local plugin marketplaces installed through
the real plugin commands, loopback model APIs, and a private tmux server.

Only `claude` and `codex` are real. `coderabbit` and `auggie` stay stubs (CodeRabbit is not on
npm); AgentMemory is the loopback fake from tests/support/memserver.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.contract import clis, marketplace
from tests.contract.fakeapis import ModelsApi, ResponsesApi, ScriptedMessagesApi
from tests.contract.report import INSTALLED
from tests.contract.tmux import Tmux
from tests.support.stubs import Stubs

# Plugins as plan-build's preflight names them (plugin@marketplace), with the version each
# local marketplace serves.
AGENTMEMORY = ("agentmemory", "agentmemory", "0.9.29")
MATTPOCOCK = ("mattpocock-skills", "mattpocock", "1.2.0")
# Inherited variables that would change how the real CLIs behave (a run from inside a Claude
# Code session, real API keys or endpoints): removed for every contract test.
INHERITED = ("ANTHROPIC_", "OPENAI_", "CLAUDE_CODE_", "CLAUDECODE", "CODEX_", "CLAUDE_")
QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "LANG": "C.UTF-8",
}
DUMMY_KEY = "sk-ant-contract-0000000000000000000000"


@pytest.fixture(scope="session")
def real_clis(request: pytest.FixtureRequest) -> clis.Installed:
    """The pinned CLIs from the cache (installed by npm on first use). No npm, a failed install
    or a wrong version fails every contract test: this suite never skips."""
    try:
        got = clis.install()
    except clis.InstallError as exc:
        pytest.fail(f"contract CLIs unavailable: {exc}", pytrace=False)
    request.config.stash[INSTALLED] = got
    return got


@dataclass
class Agents:
    """The real CLIs as this test sees them (PATH, HOME and config dirs already set)."""

    clis: clis.Installed
    home: Path
    claude_dir: Path
    codex_dir: Path

    def run(
        self,
        tool: str,
        *args: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool, *args],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    def json(self, tool: str, *args: str, cwd: Path) -> Any:
        """Run a `--json` command that must succeed; its stdout parsed."""
        r = self.run(tool, *args, cwd=cwd)
        assert r.returncode == 0, f"{tool} {' '.join(args)} exited {r.returncode}: {r.stderr}"
        return json.loads(r.stdout)


@pytest.fixture
def agents(
    real_clis: clis.Installed,
    stubs: Stubs,
    private_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Agents:
    """Real claude/codex first on PATH (their stubs removed), configs under the private HOME."""
    for tool in ("claude", "codex"):
        stubs.remove(tool)
    for var in list(os.environ):
        if var.startswith(INHERITED):
            monkeypatch.delenv(var)
    monkeypatch.setenv("PATH", f"{real_clis.bin}{os.pathsep}{os.environ['PATH']}")
    claude_dir = private_home / ".claude"
    codex_dir = private_home / ".codex"
    codex_dir.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    monkeypatch.setenv("CODEX_HOME", str(codex_dir))
    for var, value in QUIET.items():
        monkeypatch.setenv(var, value)
    return Agents(real_clis, private_home, claude_dir, codex_dir)


@dataclass
class Plugins:
    """The local marketplaces and the real CLIs' answers while installing from them."""

    agentmemory_mkt: Path
    mattpocock_mkt: Path
    answers: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
def plugins(agents: Agents, tmp_path: Path) -> Plugins:
    """agentmemory (Claude and Codex) and mattpocock-skills (Claude) installed and enabled
    through the real `claude plugin` / `codex plugin` commands from local marketplaces."""
    root = tmp_path / "marketplaces"
    am_plugin, am_mkt, am_version = AGENTMEMORY
    mp_plugin, mp_mkt, mp_version = MATTPOCOCK
    am = marketplace.build(root, am_mkt, am_plugin, am_version, codex=True)
    mp = marketplace.build(root, mp_mkt, mp_plugin, mp_version, codex=False)
    result = Plugins(am, mp)
    cwd = tmp_path  # a project directory that is not HOME (user scope stays user scope)
    steps = [
        ("claude", "plugin", "marketplace", "add", str(am), "--json"),
        ("claude", "plugin", "install", f"{am_plugin}@{am_mkt}", "--json"),
        ("claude", "plugin", "marketplace", "add", str(mp), "--json"),
        ("claude", "plugin", "install", f"{mp_plugin}@{mp_mkt}", "--json"),
        ("codex", "plugin", "marketplace", "add", str(am), "--json"),
        ("codex", "plugin", "add", f"{am_plugin}@{am_mkt}", "--json"),
    ]
    for tool, *args in steps:
        result.answers[" ".join([tool, *args[:-2]])] = agents.json(tool, *args, cwd=cwd)
    return result


@pytest.fixture
def models_api() -> Iterator[ModelsApi]:
    with ModelsApi() as api:
        yield api  # type: ignore[misc]


@pytest.fixture
def responses_api() -> Iterator[ResponsesApi]:
    with ResponsesApi() as api:
        yield api  # type: ignore[misc]


@pytest.fixture
def codex_api(
    agents: Agents, responses_api: ResponsesApi, monkeypatch: pytest.MonkeyPatch
) -> ResponsesApi:
    """The loopback Responses API as Codex's configured provider (CODEX_HOME/config.toml), so
    plan-build's own `codex exec` argv reaches it unchanged."""
    responses_api.configure(agents.codex_dir)
    monkeypatch.setenv("MOCK_API_KEY", "contract-key")
    return responses_api


def seed_offline_start(claude_dir: Path, project: Path, api_key: str) -> None:
    """Pre-answer Claude Code's first-run screens (onboarding, workspace trust, the custom
    API key question, the bypass-permissions warning) so an interactive start needs no
    network and no keystrokes. Merges into what the plugin commands already wrote."""
    state_file = claude_dir / ".claude.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    state["hasCompletedOnboarding"] = True
    state.setdefault("theme", "dark")
    state["customApiKeyResponses"] = {"approved": [api_key[-20:]], "rejected": []}
    state.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True}
    claude_dir.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state, indent=2))
    settings_file = claude_dir / "settings.json"
    settings = json.loads(settings_file.read_text()) if settings_file.exists() else {}
    settings["skipDangerousModePermissionPrompt"] = True
    settings_file.write_text(json.dumps(settings, indent=2))


@pytest.fixture
def tmux(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tmux]:
    """A private tmux server on its own socket; killed (with whatever runs in it) at the end.
    The socket lives in a short path: unix socket paths are limited to about 100 bytes."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not on PATH: the contract suite's terminal tests need it")
    sock_dir = tmp_path_factory.mktemp("tmux", numbered=True)
    term = Tmux(sock_dir / "s", {})
    yield term
    term.close()


@pytest.fixture
def scripted() -> Iterator[ScriptedMessagesApi]:
    with ScriptedMessagesApi() as api:
        yield api  # type: ignore[misc]


@dataclass
class Lab:
    """A ready repository, the real claude, the scripted model and a private tmux server."""

    tmux: Tmux
    ready: Path
    agents: Agents
    api: ScriptedMessagesApi
    tmp: Path


@pytest.fixture
def lab(
    tmux: Tmux, ready: Path, agents: Agents, scripted: ScriptedMessagesApi, tmp_path: Path
) -> Lab:
    return Lab(tmux, ready, agents, scripted, tmp_path)
