"""The user's index file is never written by a command that does not commit: not even a stat
refresh. The scenario is the one a fuzz run found: a linked worktree whose user has a staged
edit to ` lead-space.txt`, with stat data in the index older than the files (so any git
command that refreshes would rewrite the index)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.support.gitcmd import git
from tests.support.pty_run import run_on_pty
from tests.support.stubs import Stubs


def _stat_dirty(root: Path, *names: str) -> None:
    """Give the files a new mtime without changing their content."""
    later = time.time() + 5
    for name in names:
        os.utime(root / name, (later, later))


@pytest.fixture
def linked(ready: Path) -> Path:
    """A linked worktree of the ready repository, with a user's staged edit to a file whose
    name starts with a space and a stat-dirty tracked file."""
    (ready / " lead-space.txt").write_text("one\n")
    (ready / "notes.txt").write_text("notes\n")
    git(ready, "add", ".")
    git(ready, "commit", "-qm", "files")
    wt = ready.parent / "shop-linked"
    git(ready, "worktree", "add", "-q", "-b", "feature", str(wt))
    (wt / " lead-space.txt").write_text("one\nstaged by the user\n")
    git(wt, "add", " lead-space.txt")
    _stat_dirty(wt, " lead-space.txt", "notes.txt", "README.md")
    return wt


def index_bytes(wt: Path) -> bytes:
    return (Path(git(wt, "rev-parse", "--absolute-git-dir").strip()) / "index").read_bytes()


def test_no_command_rewrites_the_users_index(cli, linked: Path, stubs: Stubs) -> None:
    before = index_bytes(linked)

    assert cli("preflight", cwd=linked).code == 0
    assert index_bytes(linked) == before, "preflight rewrote the index"
    assert cli("plan", "--dry-run", cwd=linked, input="work\nEOF\n").code == 0
    assert index_bytes(linked) == before, "plan --dry-run rewrote the index"
    r = run_on_pty(
        [sys.executable, "-m", "plan_build", "plan"],
        cwd=linked,
        env={**os.environ, "NO_COLOR": "1"},
        typed=[("> ", "work\n"), ("> ", "EOF\n")],
    )
    assert r.code == 0, r.output
    assert index_bytes(linked) == before, "the launch (preflight + baseline) rewrote the index"
    env = {"PLAN_BUILD_SESSION": ""}
    assert cli("baseline", cwd=linked, env=env).code == 0
    assert index_bytes(linked) == before, "baseline rewrote the index"
    (linked / "session.txt").write_text("the session's file\n")
    _stat_dirty(linked, " lead-space.txt", "notes.txt")
    assert cli("status", cwd=linked, env=env).code == 0
    assert index_bytes(linked) == before, "status rewrote the index"
    verify = cli("verify", cwd=linked, env=env)
    assert verify.code == 0, verify.stderr
    assert index_bytes(linked) == before, "verify rewrote the index"
    refused = cli("commit", "--message", "work", cwd=linked, env=env)  # no terminal: refused
    assert refused.code == 4, refused.stderr
    assert index_bytes(linked) == before, "a refused commit rewrote the index"
    assert git(linked, "diff", "--cached", "--name-only") == " lead-space.txt\n"
