"""`status`: the intended change (current work tree minus the baseline), file by file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from plan_build.core import gitrepo
from plan_build.delivery import baseline
from plan_build.delivery import intended as change
from tests.support.gitcmd import git


@pytest.fixture
def session(repo: Path) -> Path:
    (repo / "app.py").write_text("a = 1\nb = 2\n")
    (repo / "tool.sh").write_text("echo hi\n")
    (repo / "old.txt").write_text("bye\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "files")
    (repo / "mine.txt").write_text("pre-existing, untracked\n")
    baseline.capture(gitrepo.discover(repo), session_id="s")
    return repo


def test_status_lists_the_session_files_with_counts(session: Path, cli) -> None:
    (session / "app.py").write_text("a = 1\nb = 3\nc = 4\n")
    (session / "new dir").mkdir()
    (session / "new dir" / "naïve file.md").write_text("hello\n")
    (session / "old.txt").unlink()
    (session / "logo.bin").write_bytes(b"\x00\x01\x02")

    r = cli("status", cwd=session)

    assert r.code == 0, r.stderr
    assert "intended change: 4 files, +3 −2" in r.stderr
    assert "M  app.py  +2 −1" in r.stderr
    assert "A  logo.bin  binary" in r.stderr
    assert "A  new dir/naïve file.md  +1 −0" in r.stderr
    assert "D  old.txt  +0 −1" in r.stderr
    assert "mine.txt" not in r.stderr.split("kept apart")[0]
    assert "kept apart: 1 path(s)" in r.stderr


def test_status_json(session: Path, cli) -> None:
    (session / "app.py").write_text("a = 1\n")
    data = json.loads(cli("status", "--json", cwd=session).stdout)
    assert data["session"] == "s"
    assert data["pre_existing"] == 1
    assert data["change"]["count"] == 1
    assert data["change"]["files"][0] == {
        "path": "app.py",
        "status": "M",
        "added": 0,
        "deleted": 1,
        "binary": False,
        "old_mode": "100644",
        "new_mode": "100644",
    }


def test_exec_bit_symlink_and_rename_show_up(session: Path) -> None:
    os.chmod(session / "tool.sh", 0o755)  # noqa: S103
    (session / "link").symlink_to("app.py")
    os.rename(session / "old.txt", session / "renamed.txt")
    r = gitrepo.discover(session)
    ch = change.compute(r, baseline.load(r, "s"))
    by_path = {f.path: f for f in ch.files}
    assert by_path["tool.sh"].status == "M"
    tool, link = by_path["tool.sh"].new, by_path["link"].new
    assert tool is not None
    assert tool.mode == "100755"
    assert link is not None
    assert link.kind == "symlink"
    assert by_path["old.txt"].status == "D"  # a rename is a delete plus an add
    assert by_path["renamed.txt"].status == "A"


def test_names_with_newlines_and_bad_bytes_survive(session: Path) -> None:
    weird = os.fsdecode(b"bad\xffname\nwith newline.txt")
    (session / weird).write_text("x\n")
    r = gitrepo.discover(session)
    ch = change.compute(r, baseline.load(r, "s"))
    assert ch.paths == [weird]
    assert change.display_path(weird) == '"bad\\xffname\\nwith newline.txt"'


def test_empty_change(session: Path, cli) -> None:
    r = cli("status", cwd=session)
    assert "no intended change yet" in r.stderr


def test_unquote_path_undoes_git_quoting() -> None:
    assert change.unquote_path(b'"a\\tb\\303\\251\\"q\\\\"') == 'a\tbé"q\\'.encode()
    assert change.unquote_path(b"plain name") == b"plain name"


def test_parse_added_counts_lines_by_hunk_header() -> None:
    diff = (
        b"diff --git a/x.md b/x.md\n"
        b"--- a/x.md\n"
        b"+++ b/x.md\n"
        b"@@ -1,0 +2,3 @@\n"
        b"+++ not a header\n"
        b"+@@ -1 +1 @@\n"
        b"+diff --git a/y b/y\n"
        b'diff --git "a/sp ace\\n" "b/sp ace\\n"\n'
        b"new file mode 100644\n"
        b"--- /dev/null\n"
        b'+++ "b/sp ace\\n"\n'
        b"@@ -0,0 +1 @@\n"
        b"+token\n"
        b"diff --git a/gone b/gone\n"
        b"--- a/gone\n"
        b"+++ /dev/null\n"
        b"@@ -1 +0,0 @@\n"
        b"-x\n"
    )
    assert change.parse_added(diff) == {
        "x.md": [(2, "++ not a header"), (3, "@@ -1 +1 @@"), (4, "diff --git a/y b/y")],
        "sp ace\n": [(1, "token")],
    }


def test_objects_with_newlines_in_their_path_are_reported_missing_not_misread(
    session: Path,
) -> None:
    r = gitrepo.discover(session)
    head = git(session, "rev-parse", "HEAD^{tree}").strip()
    got = change.read_objects(r, [f"{head}:app.py", f"{head}:a\nb", f"{head}:nope"])
    assert got == [b"a = 1\nb = 2\n", None, None]


@pytest.mark.parametrize("recorded", [None, "3", -1, True, 2.5])
def test_kept_apart_is_counted_again_when_the_baseline_does_not_record_it(
    session: Path, cli, recorded: object
) -> None:
    """The count is recorded at baseline time (issue 15); a baseline written before that, or
    one whose record says something that is no count, is counted from its trees."""
    meta = session / ".git" / "plan-build" / "sessions" / "s" / "baseline.json"
    data = json.loads(meta.read_text())
    assert data["pre_existing"] == 1
    if recorded is None:
        del data["pre_existing"]
    else:
        data["pre_existing"] = recorded
    meta.write_text(json.dumps(data))
    (session / "mine2.txt").write_text("after the baseline\n")
    status = json.loads(cli("status", "--json", cwd=session).stdout)
    assert status["pre_existing"] == 1
    assert [f["path"] for f in status["change"]["files"]] == ["mine2.txt"]


@given(hs.text(alphabet=hs.characters(codec=None, exclude_categories=())))
def test_display_path_escapes_exactly_the_control_characters_and_bad_bytes(name: str) -> None:
    bad = any(ord(ch) < 32 or ord(ch) == 127 or 0xDC80 <= ord(ch) <= 0xDCFF for ch in name)
    shown = change.display_path(name)
    assert (shown != name) == bad
    if bad:
        assert not any(ord(ch) < 32 or ord(ch) == 127 for ch in shown)
