"""The file list between two trees is asked of git once per pair and kept (ADR 0200): `status`,
`verify`, `report` and `commit` then read the same answer, and a kept answer is never trusted
when it could differ from git's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_build.core import gitrepo, snapshot
from plan_build.delivery import intended, treediff
from tests.support.gitcmd import git


@pytest.fixture
def trees(repo: Path) -> tuple[gitrepo.Repo, str, str]:
    """A repository and two trees: its commit, and the work tree after an edit and a new file."""
    r = gitrepo.discover(repo)
    old = snapshot.worktree_tree(r)
    (repo / "README.md").write_text("# shop\nmore\n")
    (repo / "data.dat").write_text("one\ntwo\n")
    return r, old, snapshot.worktree_tree(r)


def asks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The git calls that compute a file list (diff-tree with line counts)."""
    seen: list[tuple[str, ...]] = []
    real = intended.git_bytes

    def counting(repo: gitrepo.Repo, *args: str, **kwargs: object) -> bytes:
        if args[:1] == ("diff-tree",) and "--numstat" in args:
            seen.append(args)
        return real(repo, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(intended, "git_bytes", counting)
    return seen


def listing(r: gitrepo.Repo, old: str, new: str) -> list[tuple[str, str, int | None, int | None]]:
    return [(f.path, f.status, f.added, f.deleted) for f in intended.files_between(r, old, new)]


def test_the_file_list_between_two_trees_is_asked_of_git_once_per_pair(
    trees: tuple[gitrepo.Repo, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    r, old, new = trees
    seen = asks(monkeypatch)
    first = listing(r, old, new)
    assert first == [("README.md", "M", 1, 0), ("data.dat", "A", 2, 0)]
    assert listing(r, old, new) == first
    assert len(seen) == 1  # the second answer was read back, not asked again
    assert listing(r, new, old) == [("README.md", "M", 0, 1), ("data.dat", "D", 0, 2)]
    assert len(seen) == 2  # another pair is another question


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) - 3],  # cut short
        lambda data: data + b"\0",  # a byte too many
        lambda data: b"plan-build treediff 1 " + b"0" * 32 + b" 5\nhello",  # another key
        lambda data: b"",
    ],
)
def test_a_kept_answer_that_is_damaged_or_of_another_key_is_asked_again(
    trees: tuple[gitrepo.Repo, str, str], monkeypatch: pytest.MonkeyPatch, damage: object
) -> None:
    """(What the length cannot see, an edit of the same length, would take a write into the
    state directory, which is out of every agent's reach: ADR 0190.)"""
    r, old, new = trees
    first = listing(r, old, new)
    kept = treediff.home(r) / f"{old}-{new}"
    data = kept.read_bytes()
    kept.write_bytes(damage(data))  # type: ignore[operator]
    seen = asks(monkeypatch)
    assert listing(r, old, new) == first
    assert len(seen) == 1
    assert kept.read_bytes() == data  # kept again as git gave it


def test_an_attributes_file_outside_the_tree_is_part_of_the_key(
    trees: tuple[gitrepo.Repo, str, str],
) -> None:
    """`*.dat binary` in .git/info/attributes makes git count data.dat as binary: the kept
    answer from before must not be read back."""
    r, old, new = trees
    assert ("data.dat", "A", 2, 0) in listing(r, old, new)
    info = r.common_dir / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("*.dat binary\n")
    assert ("data.dat", "A", None, None) in listing(r, old, new)


def test_only_the_newest_answers_are_kept(repo: Path) -> None:
    r = gitrepo.discover(repo)
    tree = [snapshot.worktree_tree(r)]
    for i in range(treediff.KEEP + 3):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
        tree.append(snapshot.worktree_tree(r))
        intended.files_between(r, tree[0], tree[-1])
    kept = sorted(p.name for p in treediff.home(r).iterdir())
    assert len(kept) == treediff.KEEP
    assert f"{tree[0]}-{tree[-1]}" in kept


def test_a_cache_folder_leading_out_of_the_git_dir_is_not_written(
    trees: tuple[gitrepo.Repo, str, str], tmp_path: Path
) -> None:
    r, old, new = trees
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (r.state_dir).mkdir(parents=True, exist_ok=True)
    (r.state_dir / "cache").symlink_to(outside, target_is_directory=True)
    assert listing(r, old, new) == [("README.md", "M", 1, 0), ("data.dat", "A", 2, 0)]
    assert list(outside.iterdir()) == []


def test_a_name_that_is_not_a_tree_id_is_never_kept(trees: tuple[gitrepo.Repo, str, str]) -> None:
    r, old, new = trees
    git(r.root, "tag", "before", old)
    assert listing(r, "before", new) == listing(r, old, new)
    assert not any("before" in p.name for p in treediff.home(r).iterdir())
