"""A wave task's result into the user's work tree: commit's hunk rule, binary-safe, all or
nothing, the index untouched."""

from __future__ import annotations

from pathlib import Path

from plan_build.core import gitrepo, snapshot
from plan_build.dispatch import applyback
from tests.support.gitcmd import git


def trees(
    repo: Path, task: dict[str, bytes | None], user: dict[str, bytes | None]
) -> tuple[gitrepo.Repo, str, str, str]:
    """(repo, base, task's end tree, the user's tree now) with these edits on each side."""
    r = gitrepo.discover(repo)
    base = snapshot.worktree_tree(r)
    originals = {p: (repo / p).read_bytes() if (repo / p).exists() else None for p in task}
    for p, data in task.items():
        if data is None:
            (repo / p).unlink()
        else:
            (repo / p).write_bytes(data)
    end = snapshot.worktree_tree(r)
    for p, data in originals.items():  # back to the base, then the user's edits
        if data is None:
            (repo / p).unlink(missing_ok=True)
        else:
            (repo / p).write_bytes(data)
    for p, data in user.items():
        if data is None:
            (repo / p).unlink()
        else:
            (repo / p).write_bytes(data)
    return r, base, end, snapshot.worktree_tree(r)


def apply(
    r: gitrepo.Repo,
    base: str,
    end: str,
    now: str,
    paths: list[str],
    *,
    applied_by: dict[str, str] | None = None,
) -> applyback.Applied:
    return applyback.apply(
        r, task_id="TASK-002", base=base, end=end, now=now, paths=paths, applied_by=applied_by or {}
    )


def setup(repo: Path) -> None:
    (repo / "a.txt").write_bytes(b"1\n2\n3\n4\n5\n6\n")
    (repo / "img.bin").write_bytes(b"\x00\x01\x02")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files")


def test_edits_apart_both_stay_and_the_index_is_untouched(repo: Path) -> None:
    setup(repo)
    r, base, end, now = trees(
        repo,
        {"a.txt": b"1\nTASK\n3\n4\n5\n6\n", "img.bin": b"\x00\xff", "new.txt": b"n\n"},
        {"a.txt": b"1\n2\n3\n4\nUSER\n6\n"},
    )
    got = apply(r, base, end, now, ["a.txt", "img.bin", "new.txt"])
    assert got.ok, got.conflicts
    assert (repo / "a.txt").read_bytes() == b"1\nTASK\n3\n4\nUSER\n6\n"
    assert (repo / "img.bin").read_bytes() == b"\x00\xff"  # binary, only the task changed it
    assert (repo / "new.txt").read_bytes() == b"n\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""


def test_adjoining_edits_conflict_and_nothing_is_written(repo: Path) -> None:
    setup(repo)
    r, base, end, now = trees(
        repo,
        {"a.txt": b"1\nTASK\n3\n4\n5\n6\n", "new.txt": b"n\n"},
        {"a.txt": b"1\n2\nUSER\n4\n5\n6\n"},
    )
    got = apply(r, base, end, now, ["a.txt", "new.txt"], applied_by={"a.txt": "TASK-003"})
    assert got.conflicts == [
        "`a.txt`: TASK-002's edit of line 2 meets TASK-003's edit of line 3 (edits must be "
        "separated by an unchanged line)"
    ]
    assert (repo / "a.txt").read_bytes() == b"1\n2\nUSER\n4\n5\n6\n"
    assert not (repo / "new.txt").exists()  # all or nothing


def test_binary_and_removed_files_changed_on_both_sides_conflict(repo: Path) -> None:
    setup(repo)
    r, base, end, now = trees(
        repo, {"img.bin": b"\x00task", "a.txt": None}, {"img.bin": b"\x00user", "a.txt": b"x\n"}
    )
    got = apply(r, base, end, now, ["a.txt", "img.bin"])
    assert sorted(got.conflicts) == [
        "`a.txt`: TASK-002 and you both changed it, and one of them removed it",
        "`img.bin`: TASK-002 and you both changed it (binary file)",
    ]
    assert (repo / "img.bin").read_bytes() == b"\x00user"
