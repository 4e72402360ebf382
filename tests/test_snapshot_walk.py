"""The ignored-path snapshot without GNU find (macOS's BSD find has no -newerct or -printf):
the portable walk gives exactly what `find` gives, and a find that lacks them is detected."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_build.core import ctimescan, gitrepo, snapshot
from tests.support.gitcmd import git
from tests.support.properties import examples

GNU_FIND = shutil.which("find") is not None and ctimescan.gnu_find(None) is not None
needs_gnu_find = pytest.mark.skipif(not GNU_FIND, reason="the comparison needs GNU find (Linux)")

# names a user's tools really make: spaces, newlines, quotes, globs, a leading dash, NFC and NFD
# accents, and a byte that is not UTF-8 (decoded as a surrogate, as os.listdir gives it)
NAME_CHARS = [*"ab -.\n\t*'\"\\é", "e\u0301", "\udcff"]
names = (
    st.lists(st.sampled_from(NAME_CHARS), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda n: n not in (".", "..") and not n.endswith("~"))
)
KINDS = ("file", "dir", "link-dir", "link-file", "dangling", "fifo", "socket")


def _make(path: Path, kind: str, root: Path) -> None:
    if kind == "file":
        path.write_bytes(b"x")
    elif kind == "dir":
        path.mkdir()
    elif kind == "link-dir":
        path.symlink_to(root)  # a symlink to a directory is an "l", and is never descended
    elif kind == "link-file":
        path.symlink_to(root / "target")
    elif kind == "dangling":
        path.symlink_to("nowhere")
    elif kind == "fifo":
        os.mkfifo(path)
    elif len(os.fsencode(path)) < 100:  # AF_UNIX paths are short
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(os.fsencode(path))
    else:
        os.mkfifo(path)


def _touch(path: Path, how: int) -> None:
    """Move one path's ctime: a chmod, a utime on the link itself, or a rename and back."""
    st_ = path.lstat()
    if how == 0 and not stat.S_ISLNK(st_.st_mode):
        os.chmod(path, stat.S_IMODE(st_.st_mode) ^ 0o004)
    elif how == 1:
        os.utime(path, ns=(1, 1), follow_symlinks=False)
    else:
        moved = path.with_name(path.name + "~")
        os.rename(path, moved)
        os.rename(moved, path)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, object]:
    tops = ["top"] if draw(st.booleans()) else ["top", "other top"]
    dirs = list(tops)
    entries: dict[str, str] = {}
    for _ in range(draw(st.integers(0, 10))):
        rel = f"{draw(st.sampled_from(dirs))}/{draw(names)}"
        if rel in entries:
            continue
        kind = draw(st.sampled_from(KINDS))
        entries[rel] = kind
        if kind == "dir":
            dirs.append(rel)
    every = [*tops, *entries]
    touched = draw(st.lists(st.tuples(st.sampled_from(every), st.integers(0, 2)), max_size=4))
    added = draw(st.lists(st.tuples(st.sampled_from(dirs), names), max_size=3))
    # the boundary: at, just before or just after one entry's ctime (find compares strictly)
    boundary = (draw(st.sampled_from(every)), draw(st.sampled_from((-1, 0, 1))))
    return {"tops": tops, "entries": entries, "touched": touched, "added": added, "at": boundary}


@needs_gnu_find
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees())
def test_the_portable_walk_finds_exactly_what_gnu_find_finds(tree: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        root = Path(tmp)
        (root / "target").write_text("t")
        tops: list[str] = tree["tops"]  # type: ignore[assignment]
        entries: dict[str, str] = tree["entries"]  # type: ignore[assignment]
        for top in tops:
            (root / top).mkdir()
        for rel, kind in entries.items():
            _make(root / rel, kind, root)
        at, offset = tree["at"]  # type: ignore[misc]
        since = (root / at).lstat().st_ctime_ns + offset
        time.sleep(0.005)  # past the kernel's coarse clock tick, so touches are newer
        for rel, how in tree["touched"]:  # type: ignore[attr-defined]
            _touch(root / rel, how)
        for parent, name in tree["added"]:  # type: ignore[attr-defined]
            if not (root / parent / name).exists() and not (root / parent / name).is_symlink():
                (root / parent / name).write_text("new")

        by_find = ctimescan.changed_since(root, tops, since, finder="find")
        by_walk = ctimescan.changed_since(root, tops, since, finder="walk")
        assert sorted(by_walk) == sorted(by_find)


def test_the_walk_reports_types_as_find_does_and_each_top_itself(tmp_path: Path) -> None:
    root = tmp_path
    since = time.time_ns() - 10**9  # everything below is newer
    (root / "deps" / "pkg").mkdir(parents=True)
    (root / "deps" / "pkg" / "a.js").write_text("x")
    (root / "deps" / "up").symlink_to(root / "deps" / "pkg")  # a symlink to a directory
    os.mkfifo(root / "deps" / "pipe")
    want = [
        ("d", "deps"),
        ("d", "deps/pkg"),
        ("f", "deps/pkg/a.js"),
        ("l", "deps/up"),
        ("p", "deps/pipe"),
    ]
    for finder in ("find", "walk") if GNU_FIND else ("walk",):  # macOS: the walk alone
        assert sorted(ctimescan.changed_since(root, ["deps"], since, finder=finder)) == want


BSD_FIND = """#!/bin/sh
# behaves as macOS's find: no -printf, no -newerct
echo "$*" >> "{calls}"
for a in "$@"; do
  case "$a" in -printf|-newerct) echo "find: $a: unknown primary or operator" >&2; exit 1;; esac
done
exec {real} "$@"
"""


def _changes(repo_root: Path) -> None:
    """What a dispatch might do inside an ignored directory."""
    mods = repo_root / "node_modules"
    (mods / "left-pad" / "index.js").write_text("changed")
    (mods / "fresh").mkdir()
    (mods / "fresh" / "new.js").write_text("new")
    (mods / "link").symlink_to(mods / "left-pad")
    (mods / "gone" / "old.js").unlink()
    (repo_root / ".venv" / "pyvenv.cfg").unlink()  # a top directory changed, nothing below


def _ignored_repo(root: Path) -> None:
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("node_modules/\n.venv/\n")
    (root / ".venv").mkdir()
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("v1")
    (root / "node_modules" / "gone").mkdir()
    (root / "node_modules" / "gone" / "old.js").write_text("old")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "ignore")


def test_a_find_without_newerct_is_detected_and_the_walk_gives_the_same_answer(
    tmp_path: Path,
) -> None:
    gnu, bsd = tmp_path / "gnu", tmp_path / "bsd"
    _ignored_repo(gnu)
    _ignored_repo(bsd)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "find-calls"
    (bin_dir / "find").write_text(BSD_FIND.format(calls=calls, real=shutil.which("find")))
    (bin_dir / "find").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    answers = []
    for root, repo_env in ((gnu, None), (bsd, env)):
        r = gitrepo.discover(root, env=repo_env)
        before = snapshot.ignored_files(r)
        time.sleep(0.01)
        _changes(root)
        answers.append(snapshot.changed_ignored(r, before))
        answers.append(snapshot.changed_ignored(r, before))  # the probe is not asked again

    assert answers[0] == [
        ".venv",
        "node_modules/fresh/new.js",
        "node_modules/gone",  # old.js removed: only its directory's ctime shows it
        "node_modules/left-pad/index.js",
        "node_modules/link",
    ]
    assert answers == [answers[0]] * 4
    # one probe, then never the failing -newerct call
    assert calls.read_text().splitlines() == [". -maxdepth 0 -newerct @0 -printf "]
