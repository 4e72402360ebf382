"""Snapshots see untracked work and leave the user's index and files untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_build.core import gitrepo, snapshot
from tests.support.gitcmd import git


def test_worktree_tree_includes_untracked_and_keeps_index(repo: Path) -> None:
    (repo / "new.txt").write_text("fresh\n")
    (repo / "README.md").write_text("# shop\nedited\n")
    git(repo, "add", "README.md")
    index_before = (repo / ".git" / "index").read_bytes()
    status_before = git(repo, "status", "--porcelain")

    r = gitrepo.discover(repo)
    tree = snapshot.worktree_tree(r)

    assert (repo / ".git" / "index").read_bytes() == index_before
    assert git(repo, "status", "--porcelain") == status_before
    head_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert snapshot.changed_paths(r, head_tree, tree) == ["README.md", "new.txt"]
    assert snapshot.changed_paths(r, head_tree, snapshot.index_tree(r)) == ["README.md"]


def test_ignored_files_are_not_in_the_snapshot(repo: Path) -> None:
    (repo / ".gitignore").write_text("secret.env\n")
    (repo / "secret.env").write_text("TOKEN=x\n")
    r = gitrepo.discover(repo)
    head_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert snapshot.changed_paths(r, head_tree, snapshot.worktree_tree(r)) == [".gitignore"]


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_tracked_tool_state_is_never_in_the_snapshot(repo: Path, version: str) -> None:
    """The `git rm` that drops tracked tool state is skipped only when the index's own bytes
    show it holds none (issue 15); with prefix-compressed (v4) paths it always runs."""
    git(repo, "config", "index.version", version)
    state = repo / ".claude" / "codex-review" / "workflows" / "w" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print(1)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tracked state")
    git(repo, "update-index", "--index-version", version)
    state.write_text('{"round": 2}\n')
    (repo / "notes.txt").write_text("new\n")
    tree = snapshot.worktree_tree(gitrepo.discover(repo))
    files = git(repo, "ls-tree", "-r", "--name-only", tree).split()
    assert files == ["README.md", "notes.txt", "src/app.py"]


def test_a_snapshot_without_tool_state_has_every_other_file(repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "codex-review.md").write_text("about .claude\n")
    r = gitrepo.discover(repo)
    head_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert snapshot.changed_paths(r, head_tree, snapshot.worktree_tree(r)) == [
        "docs/codex-review.md"
    ]


def test_claudes_empty_sandbox_mount_points_are_not_the_change(repo: Path) -> None:
    """While a sandboxed command runs, Claude Code leaves empty mount points in the work tree
    (`.bashrc`, `.idea`, `.claude/` ...); a plan-build command run meanwhile through the broker
    must not take them for the session's change. A real dotfile with content still counts, and
    so does an empty one git already tracks."""

    (repo / ".gitmodules").write_text("")
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-qm", "an empty tracked .gitmodules")
    r = gitrepo.discover(repo)
    before = snapshot.worktree_tree(r)
    for name in (".bashrc", ".idea", ".mcp.json", ".zshrc"):
        (repo / name).write_text("")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text("")

    assert snapshot.worktree_tree(r) == before

    (repo / ".profile").write_text("export EDITOR=vim\n")
    assert snapshot.changed_paths(r, before, snapshot.worktree_tree(r)) == [".profile"]
