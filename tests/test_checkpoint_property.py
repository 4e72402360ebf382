"""Property: any generated tree (NFD and other non-ASCII names, CRLF, binary bytes, executable
modes, symlinks, a `text=auto` attribute that would rewrite CRLF through `git add`) comes back
byte for byte after a checkpoint, the tree's destruction and `restore`."""

from __future__ import annotations

import os
import shutil
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_build.core import checkpoint, gitrepo
from plan_build.delivery import restore
from tests.support.gitcmd import git

NAMES = st.sampled_from(
    [
        "a.txt",
        "b",
        unicodedata.normalize("NFD", "café"),
        "naïve.md",
        "x y",
        "dir/n.txt",
        "dir/sub/deep.bin",
        unicodedata.normalize("NFD", "dir/é.txt"),
        "run.sh",
    ]
)
CONTENT = st.one_of(
    st.binary(max_size=300),
    st.lists(
        st.sampled_from([b"line\r\n", b"lf\n", b"\x00", b"\xff\xfe", b"cr\r"]), max_size=8
    ).map(b"".join),
)
ENTRY = st.tuples(CONTENT, st.booleans(), st.booleans())  # content, executable, a symlink to it


def write_tree(root: Path, tree: dict[str, tuple[bytes, bool, bool]]) -> None:
    for name, (data, executable, _) in tree.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if executable else 0o644)
    for name, (_, _, linked) in tree.items():
        if linked:
            os.symlink(os.path.basename(name), root / (name + ".link"))


def snapshot(root: Path) -> dict[str, object]:
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git":
            continue
        if path.is_symlink():
            found[str(rel)] = ("link", os.readlink(path))
        elif path.is_file():
            found[str(rel)] = (path.stat().st_mode & 0o111 != 0, path.read_bytes())
    return found


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=st.dictionaries(NAMES, ENTRY, min_size=1, max_size=6), tracked=st.booleans())
def test_any_tree_comes_back_byte_for_byte(repo: Path, tree: dict, tracked: bool) -> None:
    for entry in list(repo.iterdir()):
        if entry.name not in (".git", "README.md"):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    shutil.rmtree(repo / ".git" / "plan-build", ignore_errors=True)
    (repo / ".gitattributes").write_text("* text=auto\n")
    write_tree(repo, tree)
    if tracked:
        git(repo, "add", "-A")
    before = snapshot(repo)
    index = (repo / ".git" / "index").read_bytes()
    r = gitrepo.discover(repo)
    assert checkpoint.take(r, "property").ref is not None
    for entry in list(repo.iterdir()):  # destroy: everything but .git
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    git(repo, "read-tree", "HEAD")  # and the index back to HEAD's

    found = restore.plan(r, None, [])
    restore.apply(r, found, [])

    assert snapshot(repo) == before
    assert (repo / ".git" / "index").read_bytes() == index


OPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "delete", "chmod", "rename", "mkdir", "rmdir", "retype", "link"]),
        st.sampled_from(["a", "b", "d/x", "d/y", "e/z", "d", "e"]),
        st.binary(max_size=20),
    ),
    min_size=1,
    max_size=8,
)


def apply_op(root: Path, op: str, name: str, data: bytes) -> None:
    path = root / name
    try:
        if op == "write":
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                path.unlink()
            path.write_bytes(data)
        elif op == "delete" and path.is_file():
            path.unlink()
        elif op == "chmod" and path.is_file() and not path.is_symlink():
            path.chmod(path.stat().st_mode ^ 0o100)
        elif op == "rename" and path.exists():
            path.rename(root / (name.replace("/", "_") + "-moved"))
        elif op == "mkdir":
            (path / "inner").mkdir(parents=True, exist_ok=True)
            (path / "inner" / "f").write_bytes(data)
        elif op == "rmdir" and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif op == "retype" and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
            path.write_bytes(data)
        elif op == "link" and not path.exists() and not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink("README.md", path)
    except (FileExistsError, NotADirectoryError, IsADirectoryError, FileNotFoundError):
        pass


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_each_incremental_checkpoint_equals_one_taken_from_scratch(repo: Path, ops: list) -> None:
    for entry in list(repo.iterdir()):
        if entry.name not in (".git", "README.md"):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    r = gitrepo.discover(repo)
    folder = checkpoint.state_dir(r)
    shutil.rmtree(folder, ignore_errors=True)
    checkpoint.take(r, "start")
    for op, name, data in ops:
        apply_op(repo, op, name, data)
        quick = checkpoint.take(r, "step").tree
        shutil.copytree(folder, repo.parent / "kept", dirs_exist_ok=True)
        shutil.rmtree(folder)
        fresh = checkpoint.take(r, "fresh", record=False).tree
        shutil.rmtree(folder)
        shutil.copytree(repo.parent / "kept", folder)
        shutil.rmtree(repo.parent / "kept")
        assert quick == fresh, (op, name)
