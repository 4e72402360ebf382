"""release.install: skills through `current`, a launcher for the current release, no clobbering."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from tests.support.releases import fake_bundle


@pytest.fixture
def root(private_home: Path) -> Path:
    return private_home / ".local" / "share" / "plan-build"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, Console(stream=io.StringIO()))


def activate(store: Store, path: Path) -> str:
    return actions.activate(store, fetch.Source("dir", str(path), path=path), None).id


def skills(home: Path) -> tuple[Path, Path]:
    base = home / ".claude" / "skills"
    return base / "plan-build" / "SKILL.md", base / "plan-build-architect" / "SKILL.md"


def test_install_links_both_skills_through_current_and_writes_the_launcher(
    cli, tmp_path: Path, store: Store, root: Path, private_home: Path
) -> None:
    fake_bundle(tmp_path / "a", "A")
    activate(store, tmp_path / "a")
    r = cli("release.install", cwd=tmp_path)
    assert r.code == 0, r.stderr
    standard, architect = skills(private_home)
    assert os.readlink(standard) == str(root / "current" / "SKILL.md")
    assert os.readlink(architect) == str(root / "current" / "ARCHITECT.md")
    launcher = private_home / ".local" / "bin" / "plan-build"
    assert os.access(launcher, os.X_OK)
    assert r.stderr.splitlines() == [
        "installed ~/.claude/skills/plan-build/SKILL.md -> "
        "~/.local/share/plan-build/current/SKILL.md",
        "installed ~/.claude/skills/plan-build-architect/SKILL.md -> "
        "~/.local/share/plan-build/current/ARCHITECT.md",
        "installed ~/.local/bin/plan-build",
        "note: ~/.local/bin is not on PATH; add it, e.g. "
        f'export PATH="{private_home}/.local/bin:$PATH"',
    ]
    # The skills follow every activation, never a half-updated file.
    fake_bundle(tmp_path / "b", "B")
    activate(store, tmp_path / "b")
    assert "(B)" in standard.read_text()
    assert "(B)" in architect.read_text()


def test_install_twice_changes_nothing(cli, tmp_path: Path, store: Store, private_home) -> None:
    fake_bundle(tmp_path / "a")
    activate(store, tmp_path / "a")
    bin_dir = tmp_path / "bin"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    assert cli("release.install", "--bin-dir", "bin", cwd=tmp_path, env=env).code == 0
    before = (bin_dir / "plan-build").stat().st_mtime_ns
    r = cli("release.install", "--bin-dir", "bin", "--json", cwd=tmp_path, env=env)
    assert (r.code, r.stderr) == (0, "already installed · nothing changed\n")
    assert json.loads(r.stdout)["changed"] == []
    assert (bin_dir / "plan-build").stat().st_mtime_ns == before


def test_install_refuses_files_it_did_not_write_and_changes_nothing(
    cli, tmp_path: Path, store: Store, private_home: Path
) -> None:
    fake_bundle(tmp_path / "a")
    activate(store, tmp_path / "a")
    standard, architect = skills(private_home)
    standard.parent.mkdir(parents=True)
    standard.write_text("my own skill\n")
    launcher = private_home / ".local" / "bin" / "plan-build"
    launcher.parent.mkdir(parents=True)
    launcher.symlink_to(tmp_path / "pipx-venv-plan-build")  # e.g. a pipx-installed plan-build
    r = cli("release.install", cwd=tmp_path)
    assert r.code == 2
    assert "will not replace what plan-build did not install: " in r.stderr
    assert f"{standard} (a file plan-build did not write)" in r.stderr
    assert f"{launcher} (a link to {tmp_path / 'pipx-venv-plan-build'})" in r.stderr
    assert "rerun with --force" in r.stderr
    assert standard.read_text() == "my own skill\n"
    assert not architect.exists()  # nothing was half-installed

    r = cli("release.install", "--force", cwd=tmp_path)
    assert r.code == 0, r.stderr
    backup = standard.with_name("SKILL.md.plan-build-backup")
    assert backup.read_text() == "my own skill\n"
    assert "kept the old file as ~/.claude/skills/plan-build/SKILL.md.plan-build-backup" in r.stderr
    assert standard.is_symlink()
    assert "# managed-by: plan-build release.install" in launcher.read_text()


def test_install_needs_an_active_release(cli, tmp_path: Path) -> None:
    r = cli("release.install", cwd=tmp_path)
    assert r.code == 3
    assert "no active release in " in r.stderr
    assert "fix: activate one first: plan-build release.activate SOURCE" in r.stderr


def test_the_launcher_runs_the_current_release_and_respects_a_pinned_one(
    cli, tmp_path: Path, real_bundle, store: Store, root: Path, *, private_home: Path
) -> None:
    real = activate(store, real_bundle.directory)
    assert cli("release.install", cwd=tmp_path).code == 0
    launcher = private_home / ".local" / "bin" / "plan-build"

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in os.environ.items() if k != "PLAN_BUILD_RELEASE"}
        full.update(env or {})
        return subprocess.run(
            [str(launcher), *args], capture_output=True, text=True, env=full, check=False
        )

    assert run("--version").stdout == f"plan-build {real_bundle.version}\n"
    build = run("release.build")
    assert build.returncode == 3
    assert "release.build needs the checkout's own Python environment" in build.stderr
    status = json.loads(run("release", "--json").stdout)
    assert status["this_run"]["id"] == real

    fake_bundle(tmp_path / "fake", "F")
    fake = activate(store, tmp_path / "fake")
    # A child of a run bound to the real release keeps it, whatever is current now.
    pinned = run("release", "--json", env={"PLAN_BUILD_RELEASE": str(root / "releases" / real)})
    assert pinned.returncode == 0, pinned.stderr
    data = json.loads(pinned.stdout)
    assert (data["this_run"]["id"], data["current"]["id"]) == (real, fake)


def test_the_launcher_without_an_active_release_says_what_to_do(
    cli, tmp_path: Path, store: Store, root: Path, private_home: Path
) -> None:
    fake_bundle(tmp_path / "a")
    activate(store, tmp_path / "a")
    assert cli("release.install", cwd=tmp_path).code == 0
    (root / "current").unlink()
    run = subprocess.run(
        [str(private_home / ".local" / "bin" / "plan-build"), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 3
    assert run.stderr == (
        f"plan-build: no active plan-build release in {root}\n"
        "  fix: activate one: plan-build release.activate SOURCE "
        "(in a checkout: inv release.build --activate)\n"
    )
