"""Real git in a test's repository: a command's output, and a committed submodule."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def add_submodule(repo: Path, source: Path) -> None:
    """Commit a one-file repository at `source` into `repo` as the submodule `lib`."""
    source.mkdir()
    git(source, "init", "-q")
    (source / "lib.txt").write_text("v1\n")
    git(source, "add", ".")
    git(source, "commit", "-qm", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    git(repo, "commit", "-qm", "add lib")


__all__ = ["add_submodule", "git"]
