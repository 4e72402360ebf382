"""Preflight's WSL warnings: a repository on a Windows drive, and Windows agents on the PATH.

Inside WSL both still run, but weaker than on ext4 with Linux tools, so preflight names what is
lost instead of letting it pass silently (docs/portability.md). Outside WSL there is no row.
WSL is recognised by WSL_DISTRO_NAME (set by `wsl.exe`) or a kernel release naming Microsoft
(`OSRELEASE`); Windows drives are mounted under `MOUNT_ROOT` (tests point both elsewhere).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from plan_build.core import pins, proc
from plan_build.core.checks import Check

OSRELEASE = Path("/proc/sys/kernel/osrelease")
MOUNT_ROOT = "/mnt"  # WSL's default automount root
AGENTS = ("claude", "codex")


def is_wsl(env: Mapping[str, str], osrelease: Path | None = None) -> bool:
    """Whether this Linux runs inside WSL (1 or 2)."""
    if env.get("WSL_DISTRO_NAME"):
        return True
    try:
        return "microsoft" in (osrelease or OSRELEASE).read_text(encoding="utf-8").lower()
    except (OSError, UnicodeDecodeError):
        return False


def on_windows_drive(path: Path) -> bool:
    """A path on a Windows drive as WSL mounts it (/mnt/c, /mnt/d, ...)."""
    drive = re.escape(MOUNT_ROOT.rstrip("/")) + r"/[A-Za-z](?:/|$)"
    return re.match(drive, os.path.realpath(path)) is not None


def check_drive(cwd: Path) -> Check:
    where = os.path.realpath(cwd)
    if not on_windows_drive(cwd):
        return Check("wsl.drive", "pass", f"{where} is on the Linux file system")
    return Check(
        "wsl.drive",
        "warn",
        f"the repository is on a Windows drive ({where}): every snapshot and git call is "
        "several times slower, the executable bit is not kept (core.fileMode=false), line "
        "endings may be rewritten (core.autocrlf) and file locks do not exclude a second run "
        "the way they do on ext4",
        "clone the repository into the Linux file system and work there "
        "(e.g. git clone /mnt/c/... ~/src/<name>)",
    )


def windows_program(path: str) -> bool:
    """An executable that WSL would hand to Windows: a .exe, or anything on a Windows drive
    (the npm shims a Windows Node.js puts in AppData)."""
    real = os.path.realpath(path)
    return (
        path.lower().endswith(".exe")
        or real.lower().endswith(".exe")
        or on_windows_drive(Path(real))
    )


def check_agents(env: Mapping[str, str]) -> Check:
    found = {name: proc.which(name, env) for name in AGENTS}
    windows = [f"{n} is {p}" for n, p in found.items() if p and windows_program(p)]
    if not windows:
        return Check("wsl.exe", "pass", "claude and codex on PATH are Linux programs")
    return Check(
        "wsl.exe",
        "warn",
        f"{'; '.join(windows)}: a Windows program sees Windows paths, not this repository's, "
        "its processes are outside Linux process groups (plan-build cannot stop them) and "
        "Codex runs without its Linux sandbox",
        f"install the Linux builds inside WSL ({pins.install_hint('claude')} and "
        f"{pins.install_hint('codex')}, with a Linux Node.js) and put them before /mnt/c on "
        "PATH, or set appendWindowsPath=false under [interop] in /etc/wsl.conf",
    )


def checks(env: Mapping[str, str], cwd: Path) -> list[Check]:
    """The WSL rows of the readiness report; none outside WSL."""
    if not is_wsl(env):
        return []
    return [check_drive(cwd), check_agents(env)]


__all__ = [
    "MOUNT_ROOT",
    "OSRELEASE",
    "check_agents",
    "check_drive",
    "checks",
    "is_wsl",
    "windows_program",
]
