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
