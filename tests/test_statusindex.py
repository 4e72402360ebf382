"""`status` keeps a private index between runs (ADR 0131): every run gives exactly the tree a
fresh snapshot gives, whatever happened in between, and a missing, damaged or busy kept index
only means a fresh snapshot."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_build.core import gitrepo, snapshot
from plan_build.delivery import baseline, statusindex
from plan_build.delivery import intended as change
from tests.support.gitcmd import git
from tests.support.properties import examples

PATHS = ("a.txt", "b.txt", "d/c.txt", "d/e.txt", "x.log", "d/sub/f.txt")
RULE_FILES = (".gitignore", "d/.gitignore", ".git/info/exclude")
RULES = ("", "*.log\n", "d/\n", "a.txt\n", "*\n", "c.txt\n!e.txt\n", "sub\n")


def start(root: Path) -> gitrepo.Repo:
    """A repository with a tracked file that is ignored (x.log), user edits and a baseline."""
    git(root, "init", "-q")
    (root / "d").mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "d" / "c.txt").write_text("c\n")
    (root / "x.log").write_text("log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    (root / ".gitignore").write_text("*.log\n")
    (root / "a.txt").write_text("user edit\n")
    repo = gitrepo.discover(root)
    baseline.capture(repo, session_id="s")
    return repo


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def apply(root: Path, op: tuple[str, ...]) -> None:
    kind, *args = op
    if kind in ("write", "dir", "symlink"):
        target = root / args[0]
        for parent in reversed(target.relative_to(root).parents[:-1]):
            if (root / parent).exists() and not (root / parent).is_dir():
                remove(root / parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        remove(target)
        if kind == "write":
            target.write_text(args[1])
        elif kind == "dir":
            target.mkdir()
            (target / "inner.txt").write_text("inner\n")
        else:
            target.symlink_to(args[1])
    elif kind == "delete":
        remove(root / args[0])
    elif kind == "chmod":
        target = root / args[0]
        if target.is_file() and not target.is_symlink():
            target.chmod(target.stat().st_mode ^ 0o100)
    elif kind == "rules":
        target = root / args[0]
        if target.parent.is_dir():
            remove(target)
            target.write_text(args[1])
    elif kind == "add":
        subprocess.run(
            ["git", "add", "-A", "--", args[0]], cwd=root, capture_output=True, check=False
        )
    elif kind == "rm-cached":
        subprocess.run(
            ["git", "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", args[0]],
            cwd=root,
            capture_output=True,
            check=False,
        )
    elif kind == "filemode":
        git(root, "config", "core.filemode", args[0])


path = st.sampled_from(PATHS)
operation = st.one_of(
    st.tuples(st.just("write"), path, st.sampled_from(["1\n", "2\n", "22\n", "a\n"])),
    st.tuples(st.just("delete"), path),
    st.tuples(st.just("dir"), path),
    st.tuples(st.just("symlink"), path, st.sampled_from(["a.txt", "nowhere"])),
    st.tuples(st.just("chmod"), path),
    st.tuples(st.just("rules"), st.sampled_from(RULE_FILES), st.sampled_from(RULES)),
    st.tuples(st.just("add"), st.sampled_from([*PATHS, "."])),
    st.tuples(st.just("rm-cached"), st.sampled_from([*PATHS, "d"])),
    st.tuples(st.just("filemode"), st.sampled_from(["true", "false"])),
)


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(operation, min_size=1, max_size=12))
def test_every_status_gives_the_tree_a_fresh_snapshot_gives(ops: list[tuple[str, ...]]) -> None:
    with tempfile.TemporaryDirectory(prefix="pb-kept-") as tmp:
        root = Path(tmp)
        repo = start(root)
        base = baseline.load(repo, "s")
        assert statusindex.tree(repo, base) == snapshot.worktree_tree(repo)
        for op in ops:
            apply(root, op)
            assert statusindex.tree(repo, base) == snapshot.worktree_tree(repo), op


def test_a_repeated_status_sees_an_edit_made_right_after_the_last_one(repo: Path) -> None:
    """Same size, same second: git's racy-clean rule re-reads the file."""
    (repo / "app.py").write_text("v = 1\n")
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    (repo / "app.py").write_text("v = 2\n")
    first = change.compute(r, base)
    (repo / "app.py").write_text("v = 3\n")
    second = change.compute(r, base)
    assert first.tree != second.tree
    assert second.tree == snapshot.worktree_tree(r)
    assert (statusindex.home(r, base) / "state.json").exists()


def test_a_file_ignored_by_a_new_self_ignoring_gitignore_leaves_the_change(repo: Path) -> None:
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("made\n")
    assert change.compute(r, base).paths == ["build/out.txt"]
    (repo / "build" / ".gitignore").write_text("*\n")  # ignores itself too: not in the tree
    assert change.compute(r, base).paths == []


def test_a_damaged_kept_index_means_a_fresh_snapshot(repo: Path) -> None:
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    (repo / "new.txt").write_text("new\n")
    assert change.compute(r, base).paths == ["new.txt"]
    (statusindex.home(r, base) / "index").write_bytes(b"DIRC garbage")
    (repo / "other.txt").write_text("other\n")
    assert change.compute(r, base).paths == ["new.txt", "other.txt"]
    (statusindex.home(r, base) / "state.json").write_text("{not json")
    assert change.compute(r, base).paths == ["new.txt", "other.txt"]


def test_a_kept_index_held_by_another_run_means_a_fresh_snapshot(repo: Path) -> None:
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    home = statusindex.home(r, base)
    home.mkdir(parents=True)
    fd = os.open(home / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        (repo / "new.txt").write_text("new\n")
        assert change.compute(r, base).paths == ["new.txt"]
        assert not (home / "index").exists()
    finally:
        os.close(fd)


def test_the_kept_index_goes_when_the_session_is_committed(repo: Path) -> None:
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    (repo / "new.txt").write_text("new\n")
    change.compute(r, base)
    assert statusindex.home(r, base).is_dir()
    baseline.mark_committed(r, base, git(repo, "rev-parse", "HEAD").strip())
    assert not statusindex.home(r, base).exists()
