"""`plan-build setup`: the plan, the consent, the steps, the recheck; and every bad input.

The stub claude/codex emulate their plugin commands over state files (tests/support/stubtool.py)
so a step really changes what the next `plugin list` says, and a second setup finds nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from plan_build.core.errors import PlanBuildError
from plan_build.startup import setup as setup_mod
from plan_build.startup import setupstep, sources
from tests.support.gitcmd import git
from tests.support.memserver import MemoryServer
from tests.support.paths import ROOT
from tests.support.sessions import make_session
from tests.support.stubs import Stubs

SOURCES = {"rohitg00/agentmemory": "agentmemory", "mattpocock/skills": "mattpocock"}
MUTATING = {"add", "install", "enable"}


def emulate(stubs: Stubs, tool: str, **state: Any) -> Path:
    path = stubs.home / f"{tool}.plugins.json"
    path.write_text(json.dumps({"sources": SOURCES, **state}))
    stubs.rule(tool, {"match": ["plugin"], "emulate": "plugins"})
    return path


def plugin_calls(stubs: Stubs) -> list[str]:
    return [
        " ".join([c["tool"], *c["argv"]])
        for c in stubs.calls()
        if c["argv"][:1] == ["plugin"] and set(c["argv"]) & MUTATING
    ]


@pytest.fixture(autouse=True)
def installed_release(request: pytest.FixtureRequest) -> None:
    """Most tests here are about other steps: their machine already has an active release with
    its skills and launcher installed. The release step's own tests ask for `no_release`."""
    if "no_release" in request.fixturenames:
        return
    from plan_build.release import install, root_dir

    root = root_dir(os.environ)
    release = root / "releases" / "0123456789abcdef"
    release.mkdir(parents=True)
    for name in ("SKILL.md", "ARCHITECT.md"):
        (release / name).write_text("---\nname: x\ndescription: y\n---\n")
    (root / "current").symlink_to("releases/0123456789abcdef")
    home = Path(os.environ["HOME"])
    install.install(root, home, home / ".local" / "bin", force=False, path_env="")


@pytest.fixture
def no_release() -> None:
    """No release is active on this machine (see installed_release)."""


@pytest.fixture
def fresh(ready: Path, stubs: Stubs) -> Path:
    """Everything ready except that neither CLI has any plugin or marketplace yet."""
    emulate(stubs, "claude")
    emulate(stubs, "codex")
    return ready


def test_setup_yes_installs_the_plugins_and_a_second_run_finds_nothing_to_do(
    cli: Any, fresh: Path, stubs: Stubs
) -> None:
    before = cli("preflight", "--json", cwd=fresh)
    assert before.code == 3

    r = cli("setup", "--yes", cwd=fresh, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    assert plugin_calls(stubs) == [
        "claude plugin marketplace add mattpocock/skills --scope user --json",
        "claude plugin install mattpocock-skills@mattpocock --scope user --json",
        "claude plugin marketplace add rohitg00/agentmemory --scope user --json",
        "claude plugin install agentmemory@agentmemory --scope user --json",
        "codex plugin marketplace add rohitg00/agentmemory --json",
        "codex plugin add agentmemory@agentmemory --json",
    ]
    assert "setup plan: 6 step(s) to run, 0 for you" in r.stderr
    assert r.stderr.count("ok   done") == 6
    assert "ok   Claude plugins" in r.stderr  # the final readiness report
    assert cli("preflight", cwd=fresh).code == 0

    again = cli("setup", "--yes", cwd=fresh)
    assert again.code == 0, again.stderr
    assert "setup: nothing to do" in again.stderr
    assert len(plugin_calls(stubs)) == 6  # nothing ran the second time


def test_the_plan_names_every_change_and_command_and_dry_run_changes_nothing(
    cli: Any, fresh: Path, stubs: Stubs
) -> None:
    state = (stubs.home / "claude.plugins.json").read_text()
    r = cli("setup", "--dry-run", "--json", cwd=fresh, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["outcomes"] == []
    assert data["report"]["ok"] is False
    first = data["plan"][0]
    assert first["command"] == "claude plugin marketplace add mattpocock/skills --scope user --json"
    assert first["changes"] == ["~/.claude/settings.json", "~/.claude/plugins/"]
    assert first["runs"] is True
    install = data["plan"][1]
    assert install["needs"] == [first["id"]]
    assert "     needs    step 1" in r.stderr
    assert "dry run: nothing was changed" in r.stderr
    assert plugin_calls(stubs) == []
    assert (stubs.home / "claude.plugins.json").read_text() == state


def test_without_a_terminal_or_yes_it_prints_the_plan_and_exits_4(
    cli: Any, fresh: Path, stubs: Stubs
) -> None:
    r = cli("setup", "--json", cwd=fresh)
    assert r.code == 4
    assert "there is no terminal to ask" in r.stderr
    assert "--yes" in r.stderr
    assert len(json.loads(r.stdout)["plan"]) == 6
    assert plugin_calls(stubs) == []


def test_each_step_is_asked_and_no_skips_what_needs_it(fresh: Path, stubs: Stubs) -> None:
    # no to the first marketplace, yes to the rest one by one, then all
    session, _, err = make_session(fresh, answers=["n", "y", "y", "a"])
    with pytest.raises(PlanBuildError) as raised:
        setup_mod.run(session, setup_mod.Options())
    assert "not ready: claude.plugin.mattpocock-skills" in str(raised.value)
    assert session.ui.asked[0] == (
        "1. add the Claude plugin marketplace mattpocock from mattpocock/skills?"
    )
    assert len(session.ui.asked) == 4  # step 2 needs step 1: skipped, never asked
    text = err.getvalue()
    assert "skip declined: you said no" in text
    assert "skip skipped: needs step 1 declined" in text
    assert "mattpocock" not in " ".join(plugin_calls(stubs))
    assert "codex plugin add agentmemory@agentmemory --json" in plugin_calls(stubs)


def test_quit_stops_asking_and_runs_nothing_more(fresh: Path, stubs: Stubs) -> None:
    session, _, err = make_session(fresh, answers=["y", "q"])
    with pytest.raises(PlanBuildError, match="not ready"):
        setup_mod.run(session, setup_mod.Options())
    assert len(session.ui.asked) == 2
    assert plugin_calls(stubs) == [
        "claude plugin marketplace add mattpocock/skills --scope user --json"
    ]
    text = err.getvalue()
    assert text.count("not_run: you quit") == 3  # steps 2, 3 and 5
    assert "skip skipped: needs step 3 not_run" in text


def test_the_question_on_a_real_terminal_offers_yes_no_all_quit(fresh: Path, stubs: Stubs) -> None:
    from tests.support.pty_run import run_on_pty

    env = {**os.environ, "NO_COLOR": "1"}
    r = run_on_pty(
        [sys.executable, "-m", "plan_build", "setup", "--mode", "architect"],
        cwd=fresh,
        env=env,
        typed=[("[q]uit", "\n"), ("[q]uit", "a\n")],
    )
    assert "[y]es · [n]o (default) · [a]ll · [q]uit" in r.output
    assert "declined: you said no" in r.output  # Enter takes the default: no
    assert r.code == 3
    assert "claude plugin marketplace add" not in " ".join(plugin_calls(stubs))
    assert "codex plugin add agentmemory@agentmemory --json" in plugin_calls(stubs)


def test_the_scope_the_user_already_uses_is_kept(cli: Any, fresh: Path, stubs: Stubs) -> None:
    emulate(
        stubs,
        "claude",
        plugins=[
            {"id": "other@mkt", "scope": "project", "projectPath": str(fresh), "enabled": True},
            {
                "id": "agentmemory@agentmemory",
                "scope": "local",
                "projectPath": str(fresh),
                "enabled": False,
            },
        ],
        marketplaces=["agentmemory"],
    )
    r = cli("setup", "--yes", "--mode", "architect", cwd=fresh)
    assert r.code == 0, r.stderr
    calls = [c for c in plugin_calls(stubs) if c.startswith("claude")]
    assert calls == ["claude plugin enable agentmemory@agentmemory --scope local --json"]


def test_a_marketplace_that_does_not_exist_fails_its_step_and_skips_the_install(
    cli: Any, fresh: Path, stubs: Stubs
) -> None:
    (fresh / ".plan-build.yaml").write_text("setup:\n  marketplaces:\n    mattpocock: /mirror/mp\n")
    r = cli(
        "setup",
        "--yes",
        cwd=fresh,
        env={"NO_COLOR": "1", "PLAN_BUILD_MARKETPLACE_AGENTMEMORY": "/nowhere/agentmemory"},
    )
    assert r.code == 3
    assert "claude plugin marketplace add /nowhere/agentmemory --scope user --json" in r.stderr
    assert "claude plugin marketplace add /mirror/mp --scope user --json" in r.stderr
    assert "| ✘ Path does not exist: /nowhere/agentmemory" in r.stderr
    assert "set another source with PLAN_BUILD_MARKETPLACE_AGENTMEMORY" in r.stderr
    assert "skipped: needs step 3 failed" in r.stderr
    assert not any("install agentmemory" in c for c in plugin_calls(stubs))


def test_a_plugin_that_installs_but_stays_disabled_fails_with_the_remedy(
    cli: Any, fresh: Path, stubs: Stubs
) -> None:
    emulate(stubs, "claude", stay_disabled=["agentmemory@agentmemory"])
    r = cli("setup", "--yes", cwd=fresh, env={"NO_COLOR": "1"})
    assert r.code == 3
    assert "FAIL agentmemory@agentmemory is installed but still disabled" in r.stderr
    assert "-> claude plugin enable agentmemory@agentmemory --scope user" in r.stderr


def test_a_disabled_codex_plugin_is_enabled_keeping_every_other_byte(
    cli: Any, ready: Path, stubs: Stubs
) -> None:
    codex_home = stubs.home / "codex-home"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    original = (
        "# my settings\n"
        'model = "o3"  # favourite\n\n'
        "[profiles.fast]\nmodel_reasoning_effort = 'low'\n\n"
        '[plugins."agentmemory@agentmemory"]\n'
        "enabled = false   # switched off on purpose once\n"
        '\n[marketplaces.agentmemory]\nsource_type = "local"\n'
    )
    config.write_text(original)
    emulate(
        stubs,
        "codex",
        plugins=[{"id": "agentmemory@agentmemory"}],
        marketplaces=["agentmemory"],
    )
    r = cli("setup", "--yes", cwd=ready, env={"CODEX_HOME": str(codex_home)})
    assert r.code == 0, r.stderr
    assert config.read_text() == original.replace("enabled = false   #", "enabled = true   #")
    assert plugin_calls(stubs) == []  # an edit of one key, no command
    assert "enable the Codex plugin agentmemory@agentmemory in" in r.stderr


def test_a_config_toml_that_is_not_toml_is_refused_naming_its_line(
    cli: Any, fresh: Path, stubs: Stubs
) -> None:
    codex_home = stubs.home / "codex-home"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text('model = "o3"\n[plugins."agentmemory@agentmemory"\nenabled = false\n')
    before = config.read_bytes()
    r = cli("setup", "--yes", cwd=fresh, env={"CODEX_HOME": str(codex_home), "NO_COLOR": "1"})
    assert r.code == 3
    assert f"{config} line 2 is not valid TOML" in r.stderr
    assert "plan-build will not edit it" in r.stderr
    assert config.read_bytes() == before
    assert not any(c.startswith("codex") for c in plugin_calls(stubs))


def test_codex_enable_refuses_invalid_toml_and_writes_nothing(tmp_path: Path) -> None:
    from plan_build.startup import codexconfig

    config = tmp_path / "config.toml"
    config.write_text("a = 1\n\n[broken\n")
    with pytest.raises(PlanBuildError, match=r"line 3 is not valid TOML"):
        codexconfig.enable(config, "agentmemory@agentmemory")
    assert config.read_text() == "a = 1\n\n[broken\n"
    fresh = tmp_path / "new" / "config.toml"
    assert codexconfig.enable(fresh, "agentmemory@agentmemory") is True
    assert tomllib.loads(fresh.read_text()) == {
        "plugins": {"agentmemory@agentmemory": {"enabled": True}}
    }
    assert codexconfig.enable(fresh, "agentmemory@agentmemory") is False


def test_a_symlinked_codex_config_stays_a_link(tmp_path: Path) -> None:
    from plan_build.startup import codexconfig

    real = tmp_path / "dotfiles" / "codex.toml"
    real.parent.mkdir()
    real.write_text('[plugins."agentmemory@agentmemory"]\nenabled = false\n')
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    assert codexconfig.enable(link, "agentmemory@agentmemory")
    assert link.is_symlink()
    assert "enabled = true" in real.read_text()


def bin_with(tmp_path: Path, *, sandbox: bool = True, **scripts: str) -> Path:
    """A PATH directory holding git (and the sandbox's bwrap and socat unless `sandbox` is
    false), plus the given shell scripts."""
    where = tmp_path / "path-bin"
    where.mkdir(exist_ok=True)
    git_path = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    (where / "git").symlink_to(git_path.stdout.strip())
    for tool in ("bwrap", "socat", "true") if sandbox else ():
        if (found := shutil.which(tool)) is not None:
            (where / tool).symlink_to(found)
    for name, body in scripts.items():
        (where / name).write_text("#!/bin/sh\n" + body)
        (where / name).chmod(0o755)
    return where


def test_without_npm_the_tools_are_manual_with_the_pinned_versions(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    stubs.remove("claude")
    stubs.remove("codex")
    stubs.remove("coderabbit")
    path = f"{stubs.bin}{os.pathsep}{bin_with(tmp_path)}"
    r = cli("setup", "--dry-run", "--json", cwd=ready, env={"PATH": path, "NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    yours = {s["check"]: s for s in json.loads(r.stdout)["plan"] if not s["runs"]}
    assert yours["tool.claude"]["title"] == "install claude: npm is not on PATH"
    assert yours["tool.claude"]["command"].endswith(
        "npm install -g @anthropic-ai/claude-code@2.1.332"
    )
    assert yours["tool.codex"]["command"].endswith("npm install -g @openai/codex@0.171.0")
    assert yours["tool.coderabbit"]["command"].startswith(sources.CODERABBIT_INSTALL)
    assert "plan-build never pipes a download into a shell" in yours["tool.coderabbit"]["title"]


NPM_OK = """\
if [ "$1" = prefix ]; then echo "{prefix}"; exit 0; fi
echo "npm $*" >> "{log}"
/bin/cp "{stub}" "{prefix}/bin/claude"
echo "added 3 packages in 2s"
"""
NPM_FAIL = """\
if [ "$1" = prefix ]; then echo "{prefix}"; exit 0; fi
echo "npm $*" >> "{log}"
echo "npm error code E404" >&2
echo "npm error 404 Not Found - GET https://registry.example/@anthropic-ai%2fclaude-code" >&2
exit 1
"""


@pytest.mark.parametrize("latest", [False, True])
def test_npm_installs_the_pinned_claude_then_its_plugins(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path, latest: bool
) -> None:
    emulate(stubs, "claude")
    prefix = tmp_path / "npm-prefix"
    (prefix / "bin").mkdir(parents=True)
    saved = tmp_path / "claude-stub"
    saved.write_bytes((stubs.bin / "claude").read_bytes())
    saved.chmod(0o755)
    stubs.remove("claude")
    log = tmp_path / "npm.log"
    npm = NPM_OK.format(prefix=prefix, log=log, stub=saved)
    path = os.pathsep.join([str(prefix / "bin"), str(stubs.bin), str(bin_with(tmp_path, npm=npm))])
    args = ["setup", "--yes", "--mode", "architect", *(["--latest"] if latest else [])]
    r = cli(*args, cwd=ready, env={"PATH": path, "NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    version = "latest" if latest else "2.1.332"
    assert log.read_text() == f"npm install -g @anthropic-ai/claude-code@{version}\n"
    assert f"changes  npm's global packages under {prefix}" in r.stderr
    assert "claude plugin install agentmemory@agentmemory --scope user --json" in plugin_calls(
        stubs
    )


def test_a_failing_npm_install_stops_the_steps_that_need_claude(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    prefix = tmp_path / "npm-prefix"
    stubs.remove("claude")
    log = tmp_path / "npm.log"
    npm = NPM_FAIL.format(prefix=prefix, log=log)
    path = os.pathsep.join([str(stubs.bin), str(bin_with(tmp_path, npm=npm))])
    r = cli("setup", "--yes", cwd=ready, env={"PATH": path, "NO_COLOR": "1"})
    assert r.code == 3
    assert "FAIL exited 1" in r.stderr
    assert "| npm error 404 Not Found" in r.stderr
    assert "plan-build never uses sudo" in r.stderr
    assert "skip skipped: needs step 1 failed" in r.stderr
    assert log.read_text() == "npm install -g @anthropic-ai/claude-code@2.1.332\n"


def test_the_pinned_versions_are_the_contract_suites() -> None:
    pins = tomllib.loads((ROOT / "tests" / "contract" / "versions.toml").read_text())
    assert {t: (p["package"], p["version"]) for t, p in pins.items()} == sources.NPM_PACKAGES


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def npx_script(body: str) -> str:
    return f'echo "npx $* slots=$AGENTMEMORY_SLOTS" >> "$NPX_LOG"\n{body}\n'


def test_agentmemory_is_started_detached_with_slots_and_waited_for(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("AGENTMEMORY_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AGENTMEMORY_SECRET", "s3cret-value-never-shown")
    pid_file = tmp_path / "npx.pid"
    serve = f'exec "{sys.executable}" -m tests.support.memserver "$@"'
    npx = npx_script(f'echo $$ > "{pid_file}"\ncd "{ROOT}" && {serve}')
    path = os.pathsep.join([str(stubs.bin), str(bin_with(tmp_path, npx=npx))])
    npx_log = tmp_path / "npx.log"
    r = cli("setup", "--yes", cwd=ready, env={"PATH": path, "NPX_LOG": str(npx_log)})
    try:
        assert r.code == 0, r.stderr
        assert npx_log.read_text() == (
            f"npx -y @agentmemory/agentmemory --port {port} slots=true\n"
        )
        assert "AGENTMEMORY_SLOTS=true npx -y @agentmemory/agentmemory --port" in r.stderr
        log = Path(os.environ["XDG_STATE_HOME"]) / "plan-build" / "agentmemory.log"
        assert "agentmemory stand-in on" in log.read_text()
        assert log.stat().st_mode & 0o777 == 0o600
        assert "s3cret-value-never-shown" not in r.stderr + r.stdout + log.read_text()
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGTERM)


def test_a_server_that_never_answers_fails_within_the_bound_and_is_stopped(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("AGENTMEMORY_URL", f"http://127.0.0.1:{port}")
    (ready / ".plan-build.yaml").write_text("setup:\n  memory_wait: 1.5\n")
    pid_file = tmp_path / "npx.pid"
    npx = npx_script(f'echo $$ > "{pid_file}"\necho "downloading iii engine"\nexec /bin/sleep 60')
    path = os.pathsep.join([str(stubs.bin), str(bin_with(tmp_path, npx=npx))])
    started = time.monotonic()
    r = cli(
        "setup", "--yes", cwd=ready, env={"PATH": path, "NPX_LOG": "/dev/null", "NO_COLOR": "1"}
    )
    assert time.monotonic() - started < 30
    assert r.code == 3
    assert f"no answer from http://127.0.0.1:{port}/agentmemory/livez within 1.5s" in r.stderr
    assert "it was stopped" in r.stderr
    assert "| downloading iii engine" in r.stderr
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_slots_off_names_the_setting_and_never_prints_the_secret(
    cli: Any,
    ready: Path,
    stubs: Stubs,
    memory_server: MemoryServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory_server.state.slots_enabled = False
    memory_server.state.secret = "another-secret-value"
    monkeypatch.setenv("AGENTMEMORY_SECRET", "another-secret-value")
    r = cli("setup", "--yes", "--json", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 3
    [item] = [s for s in json.loads(r.stdout)["plan"] if s["check"] == "memory.server"]
    assert item["runs"] is False
    assert "set AGENTMEMORY_SLOTS=true in the server's environment" in item["command"]
    assert "~/.agentmemory/.env" in item["command"]
    assert "another-secret-value" not in r.stdout + r.stderr


def test_a_missing_identity_is_proposed_and_written_for_you_to_commit(
    cli: Any, repo: Path, stubs: Stubs, memory_server: MemoryServer, bundle: Path
) -> None:
    git(repo, "remote", "add", "origin", "git@github.com:ana/shop.git")
    r = cli("setup", "--yes", cwd=repo, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    assert 'write .agentmemory-project with the proposed id "github.com/ana/shop"' in r.stderr
    assert (repo / ".agentmemory-project").read_text() == "github.com/ana/shop\n"
    assert "commit it: git add .agentmemory-project" in r.stderr
    again = cli("setup", "--yes", "--json", cwd=repo)
    [item] = json.loads(again.stdout)["plan"]
    assert item["title"] == "commit .agentmemory-project"
    assert item["runs"] is False


def test_skills_and_launcher_are_installed_when_a_release_is_active(
    cli: Any, ready: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_release: None
) -> None:
    root = tmp_path / "pb-home"
    release = root / "releases" / "0123456789abcdef"
    release.mkdir(parents=True)
    for name in ("SKILL.md", "ARCHITECT.md"):
        (release / name).write_text("---\nname: x\n---\n")
    (root / "current").symlink_to(release)
    monkeypatch.setenv("PLAN_BUILD_HOME", str(root))
    r = cli("setup", "--yes", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    assert "runs     plan-build release.install" in r.stderr
    home = Path(os.environ["HOME"])
    link = home / ".claude" / "skills" / "plan-build" / "SKILL.md"
    assert os.readlink(link) == str(root / "current" / "SKILL.md")
    assert (home / ".local" / "bin" / "plan-build").is_file()
    assert "setup: nothing to do" in cli("setup", "--yes", cwd=ready).stderr


def test_safe_mode_is_the_users_to_change(
    cli: Any, ready: Path, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SAFE_MODE", "1")
    rc_files = [Path(os.environ["HOME"]) / n for n in (".bashrc", ".profile", ".zshrc")]
    r = cli("setup", "--yes", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 3
    assert "-> unset CLAUDE_CODE_SAFE_MODE" in r.stderr
    assert not any(p.exists() for p in rc_files)


def test_ctrl_c_during_a_step_exits_130_and_leaves_the_config_whole(
    ready: Path, stubs: Stubs
) -> None:
    emulate(stubs, "claude")
    stubs.rule("claude", {"match": ["plugin", "marketplace", "add"], "sleep": 30})
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "setup", "--yes"],
        cwd=ready,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not (stubs.home / "claude.pid").exists() or not any(
        c["argv"][:3] == ["plugin", "marketplace", "add"] for c in stubs.calls("claude")
    ):
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "interrupted" in err
    stub_pid = int((stubs.home / "claude.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(stub_pid, 0)  # the running step was stopped with plan-build
    assert not any(p.name.endswith(".tmp") for p in stubs.home.iterdir())
    assert not (ready / ".agentmemory-project.tmp").exists()


def test_a_mistyped_setup_key_or_mode_is_a_usage_error_naming_it(cli: Any, fresh: Path) -> None:
    (fresh / ".plan-build.yaml").write_text("setup:\n  marketplaces:\n    agentmemry: /m\n")
    r = cli("setup", "--dry-run", cwd=fresh)
    assert r.code == 2
    assert ".plan-build.yaml:3: unknown key setup.marketplaces.agentmemry" in r.stderr
    bad = cli("setup", "--mode", "plan", cwd=fresh)
    assert bad.code == 2
    assert "--mode must be standard or architect, not 'plan'" in bad.stderr


@pytest.mark.parametrize("marker", ["CLAUDECODE", "CODEX_SANDBOX"])
def test_an_agent_session_may_see_the_plan_but_never_runs_it(
    cli: Any, fresh: Path, stubs: Stubs, marker: str
) -> None:
    r = cli("setup", "--yes", cwd=fresh, env={marker: "1"})
    assert r.code == 4
    assert f"runs inside an agent session ({marker} is set)" in r.stderr
    assert "ask the user to run `plan-build setup`" in r.stderr
    assert plugin_calls(stubs) == []
    assert cli("setup", "--dry-run", cwd=fresh, env={marker: "1"}).code == 0


def test_an_output_tail_drops_codex_backtraces_and_path_warnings() -> None:
    err = (
        "WARNING: proceeding, even though we could not create PATH aliases: Refusing …\n"
        "Error: failed to resolve local marketplace source path: No such file or directory\n\n"
        "Stack backtrace:\n   0: <unknown>\n   1: <unknown>\n"
    )
    assert setupstep.tail("", err) == (
        "Error: failed to resolve local marketplace source path: No such file or directory",
    )
    assert setupstep.tail("\n".join(str(i) for i in range(9))) == ("4", "5", "6", "7", "8")


# --- the install commands preflight prints are the ones setup runs (issue 24 item 4) ---------

NPM_PREFIX_ONLY = 'if [ "$1" = prefix ]; then echo "{prefix}"; exit 0; fi\nexit 1\n'


@pytest.mark.parametrize("tool", ["claude", "codex", "coderabbit"])
def test_preflight_shows_the_install_command_setup_runs_for_every_tool(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path, tool: str
) -> None:
    stubs.remove(tool)
    npm = NPM_PREFIX_ONLY.format(prefix=tmp_path / "npm-prefix")
    env = {"PATH": f"{stubs.bin}{os.pathsep}{bin_with(tmp_path, npm=npm)}", "NO_COLOR": "1"}
    rows = json.loads(cli("preflight", "--json", cwd=ready, env=env).stdout)["checks"]
    [row] = [c for c in rows if c["id"] == f"tool.{tool}"]
    plan = json.loads(cli("setup", "--dry-run", "--json", cwd=ready, env=env).stdout)["plan"]
    [step] = [s for s in plan if s["check"] == f"tool.{tool}"]
    assert row["remediation"] == step["command"]
    assert step["runs"] is (tool != "coderabbit")  # CodeRabbit's installer is only shown
    if tool in sources.NPM_PACKAGES:
        package, version = sources.NPM_PACKAGES[tool]
        assert row["remediation"] == f"npm install -g {package}@{version}"
    human = cli("preflight", cwd=ready, env=env).stderr.splitlines()
    assert f"{' ' * 25}-> {step['command']}" in human


# --- a newcomer is told about setup (issue 24 item 9) -----------------------------------------


@pytest.fixture
def newcomer(ready: Path, stubs: Stubs, tmp_path: Path) -> dict[str, str]:
    """A fresh machine: no claude, codex or coderabbit, nothing listening for AgentMemory, but
    npm and npx on PATH (so setup can install the tools and start the server)."""
    for tool in ("claude", "codex", "coderabbit"):
        stubs.remove(tool)
    npm = NPM_PREFIX_ONLY.format(prefix=tmp_path / "npm-prefix")
    where = bin_with(tmp_path, npm=npm, npx="exit 1\n")
    return {
        "PATH": f"{stubs.bin}{os.pathsep}{where}",
        "AGENTMEMORY_URL": f"http://127.0.0.1:{free_port()}",
        "NO_COLOR": "1",
    }


SETUP_FIXES = (
    "tool.claude, tool.codex, claude.plugin.mattpocock-skills, claude.plugin.agentmemory, "
    "codex.plugin.agentmemory, memory.server"
)


def fix_line(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.startswith("  fix: ")][-1]


def test_on_a_fresh_machine_preflight_names_setup_first_then_the_manual_fix(
    cli: Any, ready: Path, newcomer: dict[str, str]
) -> None:
    r = cli("preflight", cwd=ready, env=newcomer)
    assert r.code == 3
    assert fix_line(r.stderr) == (
        f"  fix: run plan-build setup first (it fixes {SETUP_FIXES} with your consent); "
        "for tool.coderabbit: apply the fixes shown above (→)"
    )
    architect = cli("preflight", "--mode", "architect", cwd=ready, env=newcomer)
    assert "fix: run plan-build setup --mode architect first" in architect.stderr


def test_on_a_fresh_machine_plan_dry_run_says_run_setup_in_would_not_launch(
    cli: Any, ready: Path, newcomer: dict[str, str]
) -> None:
    r = cli("plan", "--dry-run", cwd=ready, env=newcomer, input="fix the pager\nEOF\n")
    assert r.code == 3
    failed = (
        "tool.claude, tool.codex, tool.coderabbit, claude.plugin.mattpocock-skills, "
        "claude.plugin.agentmemory, codex.plugin.agentmemory, memory.server"
    )
    assert r.stdout.rstrip().splitlines()[-1] == (
        f"would not launch: preflight failed: {failed}"
        f" (run plan-build setup first: it fixes {SETUP_FIXES}; then the fixes shown above)"
    )


def test_the_checks_named_for_setup_are_exactly_the_ones_its_plan_runs(
    cli: Any, ready: Path, newcomer: dict[str, str]
) -> None:
    plan = json.loads(cli("setup", "--dry-run", "--json", cwd=ready, env=newcomer).stdout)["plan"]
    assert ", ".join(dict.fromkeys(s["check"] for s in plan if s["runs"])) == SETUP_FIXES
    assert [s["check"] for s in plan if not s["runs"]] == ["tool.coderabbit"]


def test_when_setup_can_fix_none_of_it_the_fix_line_stays_manual(
    cli: Any, ready: Path, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SAFE_MODE", "1")
    r = cli("preflight", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 3
    assert fix_line(r.stderr) == "  fix: apply the fixes shown above (→)"
    dry = cli("plan", "--dry-run", cwd=ready, input="x\nEOF\n")
    assert dry.stdout.rstrip().splitlines()[-1] == (
        "would not launch: preflight failed: claude.safe_mode"
    )


# --- a fresh machine ends with the skills installed (issue 24 item 1) -------------------------


def skill_link(name: str = "plan-build") -> Path:
    return Path(os.environ["HOME"]) / ".claude" / "skills" / name / "SKILL.md"


def test_with_no_release_setup_makes_this_plan_build_active_and_installs_it_once(
    cli: Any, ready: Path, no_release: None
) -> None:
    from plan_build.release import root_dir

    root = root_dir(os.environ)
    r = cli("setup", "--yes", "--json", cwd=ready, env={"NO_COLOR": "1"}, timeout=300)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    [step] = data["plan"]
    assert step["id"] == "release"
    assert step["command"] == (
        f"plan-build release.build --checkout {ROOT} --activate && plan-build release.install"
    )
    assert step["changes"][1:] == [
        "~/.claude/skills/plan-build/SKILL.md",
        "~/.claude/skills/plan-build-architect/SKILL.md",
        "~/.local/bin/plan-build",
    ]
    assert [o["status"] for o in data["outcomes"]] == ["ok"]
    # the active release is a validated one, switched to as release.activate does
    active = root / "releases" / os.readlink(root / "current").split("/")[-1]
    assert (active / "plan-build.pyz").is_file()
    assert (active / "MANIFEST.sha256").is_file()
    log = [json.loads(line) for line in (root / "activations.log").read_text().splitlines()]
    assert [entry["id"] for entry in log] == [active.name]
    # Claude's skills folder holds both skills, through `current`, with the package's text
    for name, skill in (("plan-build", "SKILL.md"), ("plan-build-architect", "ARCHITECT.md")):
        assert os.readlink(skill_link(name)) == str(root / "current" / skill)
        assert skill_link(name).read_bytes() == (ROOT / "skills" / skill).read_bytes()
    launcher = Path(os.environ["HOME"]) / ".local" / "bin" / "plan-build"
    unbound = {k: v for k, v in os.environ.items() if k != "PLAN_BUILD_RELEASE"}
    ran = subprocess.run(
        [launcher, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=unbound,
        check=False,
    )
    assert ran.stdout.strip() == "plan-build 0.1.0", ran.stderr
    status = cli("release", "--json", cwd=ready)
    assert json.loads(status.stdout)["current"]["id"] == active.name

    again = cli("setup", "--yes", "--json", cwd=ready)
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["plan"] == []
    assert "setup: nothing to do" in again.stderr
    assert len((root / "activations.log").read_text().splitlines()) == 1


def test_the_release_step_is_asked_and_a_no_changes_nothing(ready: Path, no_release: None) -> None:
    from plan_build.release import root_dir

    session, _, err = make_session(ready, answers=["n"])
    setup_mod.run(session, setup_mod.Options())  # every check passes: declining is allowed
    assert session.ui.asked == [
        "1. build a release of plan-build 0.1.0 from its checkout and activate it, then link "
        "its skills into Claude's skills folder and install the launcher?"
    ]
    assert "skip declined: you said no" in err.getvalue()
    assert not root_dir(session.env).exists()
    assert not skill_link().is_symlink()


def test_dry_run_shows_the_release_step_and_writes_nothing(
    cli: Any, ready: Path, no_release: None
) -> None:
    from plan_build.release import root_dir

    r = cli("setup", "--dry-run", cwd=ready, env={"NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    assert "setup plan: 1 step(s) to run, 0 for you" in r.stderr
    assert f"runs     plan-build release.build --checkout {ROOT} --activate" in r.stderr
    assert not root_dir(os.environ).exists()


def test_a_copied_install_in_place_of_current_is_yours_to_move(
    cli: Any, ready: Path, no_release: None
) -> None:
    from plan_build.release import root_dir

    current = root_dir(os.environ) / "current"
    current.mkdir(parents=True)
    (current / "SKILL.md").write_text("copied\n")
    r = cli("setup", "--dry-run", "--json", cwd=ready)
    [item] = json.loads(r.stdout)["plan"]
    assert item["runs"] is False
    assert (
        item["title"]
        == "~/.local/share/plan-build/current is not a symbolic link (a copied install?)"
    )
    assert item["command"] == f"mv {current} {current}.old, then rerun plan-build setup"


def test_an_installed_wheel_is_built_from_its_package_and_activated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_release: None
) -> None:
    import io
    import shutil
    import zipfile

    from plan_build.core import resources
    from plan_build.core.ui import Console
    from plan_build.release import actions
    from tests.support.releases import make_checkout

    # a wheel's layout: the package, with the skills and templates under _data/
    checkout = make_checkout(tmp_path / "checkout", marker="wheel")
    package = tmp_path / "site-packages" / "plan_build"
    shutil.copytree(checkout / "src" / "plan_build", package)
    shutil.copytree(checkout / "skills", package / "_data" / "skills")
    shutil.copytree(checkout / "templates", package / "_data" / "templates")
    monkeypatch.setattr(resources, "PACKAGE_DIR", package)
    assert actions.running_source() == ("wheel", package)

    root = tmp_path / "releases-root"
    act = actions.activate_running(root, Console(stream=io.StringIO()))
    active = root / "current"
    assert os.readlink(active) == f"releases/{act.id}"
    assert (active / "SKILL.md").read_bytes() == (package / "_data/skills/SKILL.md").read_bytes()
    assert (active / "templates/launch/standard.md.j2").is_file()
    names = zipfile.ZipFile(active / "plan-build.pyz").namelist()
    assert "plan_build/__init__.py" in names
    assert not [n for n in names if n.startswith("plan_build/_data")]


def test_on_a_fresh_machine_a_blocked_launch_names_setup_first(
    cli: Any, ready: Path, newcomer: dict[str, str]
) -> None:
    r = cli("plan", cwd=ready, env=newcomer, input="fix the pager\nEOF\n")
    assert r.code == 3
    assert fix_line(r.stderr) == (
        f"  fix: run plan-build setup first (it fixes {SETUP_FIXES} with your consent); "
        "for terminal, tool.coderabbit: apply the fixes shown above (→) and rerun"
    )


APT_OK = """\
echo "apt-get $*" >> "{log}"
/bin/ln -sf "{bwrap}" "{where}/bwrap"
/bin/ln -sf "{socat}" "{where}/socat"
echo "Setting up bubblewrap"
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="setup installs system packages only as root")
def test_setup_installs_bubblewrap_and_socat_with_the_package_manager(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    bwrap, socat = shutil.which("bwrap"), shutil.which("socat")
    if bwrap is None or socat is None:
        pytest.skip("needs the real bubblewrap and socat to stand for the installed ones")
    log = tmp_path / "apt.log"
    where = tmp_path / "path-bin"
    apt = APT_OK.format(log=log, bwrap=bwrap, socat=socat, where=where)
    bare = bin_with(tmp_path, sandbox=False, **{"apt-get": apt})
    path = os.pathsep.join([str(stubs.bin), str(bare)])

    before = cli("preflight", "--json", cwd=ready, env={"PATH": path})
    row = next(c for c in json.loads(before.stdout)["checks"] if c["id"] == "sandbox.layer")
    assert row["status"] == "fail"
    assert "plan-build setup" in row["remediation"]

    r = cli("setup", "--yes", cwd=ready, env={"PATH": path, "NO_COLOR": "1"})

    assert log.read_text() == "apt-get install -y -q bubblewrap socat\n"
    assert "install bubblewrap and socat with apt-get" in r.stderr
    after = cli("preflight", "--json", cwd=ready, env={"PATH": path})
    row = next(c for c in json.loads(after.stdout)["checks"] if c["id"] == "sandbox.layer")
    assert row["status"] == "pass"


def test_npm_installing_into_a_prefix_off_path_says_one_true_thing(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    """npm succeeded, so "read npm's error and install again" would be untrue: setup names the
    prefix and the PATH fix, and nothing else (issue 36)."""
    emulate(stubs, "claude")
    prefix = tmp_path / "npm-prefix"
    (prefix / "bin").mkdir(parents=True)
    saved = tmp_path / "claude-stub"
    saved.write_bytes((stubs.bin / "claude").read_bytes())
    saved.chmod(0o755)
    stubs.remove("claude")
    npm = NPM_OK.format(prefix=prefix, log=tmp_path / "npm.log", stub=saved)
    path = os.pathsep.join([str(stubs.bin), str(bin_with(tmp_path, npm=npm))])  # no prefix/bin
    r = cli("setup", "--yes", cwd=ready, env={"PATH": path, "NO_COLOR": "1"})
    assert r.code == 3
    assert f"`claude` is not on PATH: add {prefix}/bin to PATH" in r.stderr
    assert "read npm's error" not in r.stderr
    assert "never uses sudo" not in r.stderr


def test_agentmemory_that_exits_shows_its_cause_not_npms_upgrade_notice(
    cli: Any, ready: Path, stubs: Stubs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMEMORY_URL", f"http://127.0.0.1:{free_port()}")
    npx = npx_script(
        'echo "Error: listen EADDRINUSE: address already in use :::3111" >&2\n'
        'echo "npm notice" >&2\n'
        'echo "npm notice New major version of npm available! 10.8.2 -> 11.6.1" >&2\n'
        'echo "npm notice To update run: npm install -g npm@11.6.1" >&2\n'
        "exit 1"
    )
    path = os.pathsep.join([str(stubs.bin), str(bin_with(tmp_path, npx=npx))])
    r = cli("setup", "--yes", cwd=ready, env={"PATH": path, "NPX_LOG": str(tmp_path / "n.log")})
    assert r.code == 3
    assert "| Error: listen EADDRINUSE: address already in use :::3111" in r.stderr
    assert "npm notice" not in r.stderr
