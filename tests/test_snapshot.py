"""Snapshots see untracked work and leave the user's index and files untouched."""

from __future__ import annotations

from pathlib import Path

from plan_build import gitrepo, snapshot
from tests.conftest import git


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
