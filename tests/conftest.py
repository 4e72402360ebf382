"""Shared fixtures only: a private HOME, real git in temp repos, stub agent CLIs on PATH, a fake
AgentMemory server, the real `plan-build` entry point (`cli`). The helpers tests import
(`git`, `Stubs`, `run_cli`, `ROOT`, ...) live in tests/support/."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.contract import report as contract_report
from tests.support import properties  # noqa: F401  (registers and loads the hypothesis profile)
from tests.support.gitcmd import git
from tests.support.hangs import pytest_timeout_set_timer  # noqa: F401  (a hung test's tree)
from tests.support.memserver import MemoryServer
from tests.support.paths import ROOT
from tests.support.runcli import run_cli
from tests.support.stubs import Stubs
from tests.support.stubs import install as install_stubs

REAL_HOME = Path(os.environ.get("HOME", "/root"))
SUPPORT = Path(__file__).parent / "support"
WATCHED = (".claude", ".codex", ".agentmemory", ".augment", ".local/share/plan-build")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """With `-m contract`: the pinned real CLI versions and their cache."""
    return contract_report.header(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """With `-m contract`: the versions the real CLIs printed, and where they came from."""
    contract_report.summary(terminalreporter)


def _watched_state() -> dict[str, float]:
    state = {}
    for name in WATCHED:
        p = REAL_HOME / name
        if p.exists():
            state[name] = p.stat().st_mtime
    return state


@pytest.fixture(autouse=True)
def private_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Every test gets its own HOME; touching the real one fails the test."""
    before = _watched_state()
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # Stopping a command that ignores SIGTERM waits this grace before SIGKILL (proc.kill_grace):
    # short here, so kill tests do not each pay the shipped 2 s.
    monkeypatch.setenv("PLAN_BUILD_KILL_GRACE", "0.5")
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Test User")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "test@example.com")
    for var in (
        "AGENTMEMORY_SECRET",
        "AGENTMEMORY_URL",
        "CLAUDE_CODE_SAFE_MODE",
        "IS_SANDBOX",
        "PLAN_BUILD_RELEASE",
        "PLAN_BUILD_HOME",
        "AUGMENT_SESSION_AUTH",
        "NO_COLOR",
        "PLAN_BUILD_SESSION",
        "VISUAL",
        "EDITOR",
        "CLAUDE_CONFIG_DIR",
        "XDG_RUNTIME_DIR",
        "PLAN_BUILD_BROKER",
        "PLAN_BUILD_BROKERED",
        "CLAUDECODE",
        "CODEX_SANDBOX",
        "CODEX_SANDBOX_NETWORK_DISABLED",
        "CODEX_HOME",
        "CLAUDE_CODE_SESSION_ID",
        "PLAN_BUILD_CLAUDE_PID",
        "CODEX_CALL_TIMEOUT_SEC",
        "CODEX_REVIEW_MODEL",
        "CODEX_REVIEW_LOOP_MODEL",
    ):
        monkeypatch.delenv(var, raising=False)
    yield home
    assert _watched_state() == before, "a test touched the real HOME"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit (README.md) on main."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q")
    (root / "README.md").write_text("# shop\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def stubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stubs:
    """Stub claude/codex/coderabbit/auggie first on PATH (plus the real git and python)."""
    found = install_stubs(tmp_path / "stub-bin", tmp_path / "stub-home")
    monkeypatch.setenv("STUB_HOME", str(found.home))
    # the stub verifier logs its calls there from inside the checks' sandbox: the user's own
    # sandbox settings (core/sandbox.user_widening) let it, as a user would for a tool's cache
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "plan-build" / "sandbox.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"writable": [str(found.home)]}))
    monkeypatch.setenv("PATH", f"{found.bin}{os.pathsep}{os.environ['PATH']}")
    return found


@pytest.fixture
def memory_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryServer]:
    """A healthy loopback AgentMemory; AGENTMEMORY_URL points at it."""
    with MemoryServer() as server:
        monkeypatch.setenv("AGENTMEMORY_URL", server.url)
        yield server


@pytest.fixture
def cli() -> Any:
    return run_cli


SKILL_TEXT = "---\nname: {name}\ndescription: test skill\n---\n# {name}\nFollow the workflow.\n"


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A release-shaped directory with the checkout's templates and small skills, bound through
    PLAN_BUILD_RELEASE so tests do not depend on the real skill text."""
    import shutil

    root = tmp_path / "release"
    (root / "templates").parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "templates", root / "templates")
    (root / "SKILL.md").write_text(SKILL_TEXT.format(name="plan-build"))
    (root / "ARCHITECT.md").write_text(SKILL_TEXT.format(name="plan-build-architect"))
    monkeypatch.setenv("PLAN_BUILD_RELEASE", str(root))
    return root


@pytest.fixture
def ready(repo: Path, stubs: Stubs, memory_server: MemoryServer, bundle: Path) -> Path:
    """A repository where every preflight check passes: committed identity, stub agents with
    enabled plugins, a healthy AgentMemory and readable skills."""
    (repo / ".agentmemory-project").write_text("github.com/ana/shop\n")
    git(repo, "add", ".agentmemory-project")
    git(repo, "commit", "-q", "-m", "identity")
    return repo


@pytest.fixture(scope="session")
def real_bundle(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One real release build (zipapp and all) from a checkout in tmp, shared by the session."""
    from plan_build.release import bundle as release_bundle
    from tests.support.releases import make_checkout

    base = tmp_path_factory.mktemp("release-build")
    return release_bundle.build(make_checkout(base / "checkout"), base / "out")
