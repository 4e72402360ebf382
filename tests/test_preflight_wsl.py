"""On WSL, preflight warns about a repository on a Windows drive and Windows agents on PATH,
naming what is lost and the fix; elsewhere it adds no row."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plan_build.core.checks import Check
from plan_build.startup import preflight, preflighttable, wslchecks
from tests.support.gitcmd import git
from tests.support.sessions import make_session
from tests.support.stubs import Stubs

WSL_KERNEL = "5.15.167.4-microsoft-standard-WSL2\n"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plain Linux kernel release and a fake automount root; returns the mount root."""
    release = tmp_path / "osrelease"
    release.write_text("6.8.0-45-generic\n")
    monkeypatch.setattr(wslchecks, "OSRELEASE", release)
    monkeypatch.delenv("WSL_DISTRO_NAME", raising=False)
    mnt = tmp_path / "mnt"
    monkeypatch.setattr(wslchecks, "MOUNT_ROOT", str(mnt))
    return mnt


def test_wsl_is_recognised_by_its_kernel_or_its_variable(host: Path, tmp_path: Path) -> None:
    assert not wslchecks.is_wsl({})
    assert wslchecks.is_wsl({"WSL_DISTRO_NAME": "Ubuntu-24.04"})
    wslchecks.OSRELEASE.write_text(WSL_KERNEL)
    assert wslchecks.is_wsl({})
    assert not wslchecks.is_wsl({}, osrelease=tmp_path / "no-such-file")


def _wsl_checks(cwd: Path) -> dict[str, Check]:
    session, _, _ = make_session(cwd)
    report = preflight.run(session, preflight.Options())
    return {c.id: c for c in report.checks if c.id.startswith("wsl.")}


def test_outside_wsl_there_is_no_wsl_row(ready: Path, host: Path) -> None:
    assert _wsl_checks(ready) == {}


def test_on_wsl_a_linux_repository_and_linux_agents_pass(
    ready: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WSL_DISTRO_NAME", "Ubuntu")
    rows = _wsl_checks(ready)
    assert [(c.id, c.status) for c in rows.values()] == [
        ("wsl.drive", "pass"),
        ("wsl.exe", "pass"),
    ]


def test_on_wsl_a_repository_on_a_windows_drive_warns_with_what_is_lost(
    host: Path, stubs: Stubs
) -> None:
    wslchecks.OSRELEASE.write_text(WSL_KERNEL)
    root = host / "c" / "Users" / "ana" / "shop"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q")
    rows = wslchecks.checks(dict(os.environ), root / "src")
    drive = rows[0]
    assert (drive.id, drive.status) == ("wsl.drive", "warn")
    assert f"on a Windows drive ({root / 'src'})" in drive.detail
    for lost in ("slower", "core.fileMode=false", "core.autocrlf", "file locks"):
        assert lost in drive.detail
    assert "clone the repository into the Linux file system" in (drive.remediation or "")
    session, _, _ = make_session(root)
    text = preflighttable.render(preflight.Report("standard", rows, None), session)
    assert "WARN WSL drive         the repository is on a Windows drive" in text, text
    assert "-> clone the repository into the Linux file system" in text
    assert preflight.Report("standard", rows, None).ok  # a warning: the launch may go on
    assert not wslchecks.on_windows_drive(host / "cache" / "x")  # no drive letter


def test_on_wsl_windows_agents_on_path_warn_and_say_how_to_use_linux_ones(
    tmp_path: Path, host: Path, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WSL_DISTRO_NAME", "Ubuntu")
    # a Windows npm shim for claude (on the C: drive) and codex linked to a codex.exe
    npm = host / "c" / "Users" / "ana" / "AppData" / "Roaming" / "npm"
    npm.mkdir(parents=True)
    (npm / "claude").write_text("#!/bin/sh\nexit 0\n")
    (npm / "claude").chmod(0o755)
    exe = tmp_path / "win" / "codex.exe"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    links = tmp_path / "links"
    links.mkdir()
    (links / "codex").symlink_to(exe)
    monkeypatch.setenv("PATH", f"{npm}{os.pathsep}{links}{os.pathsep}{os.environ['PATH']}")

    check = wslchecks.check_agents(dict(os.environ))
    assert check.status == "warn"
    assert f"claude is {npm / 'claude'}" in check.detail
    assert f"codex is {links / 'codex'}" in check.detail
    for lost in ("Windows paths", "cannot stop them", "without its Linux sandbox"):
        assert lost in check.detail
    assert "appendWindowsPath=false" in (check.remediation or "")
