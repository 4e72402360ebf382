"""Property: whatever the user had uncommitted (staged, unstaged, untracked), a session's edits
that keep at least one unchanged line away from it are committed exactly, and the user's index
and work tree are afterwards exactly as the model says; edits that touch are always refused
with nothing changed. Real git, a fresh repository per example."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_build.core import gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline, commit
from plan_build.delivery import intended as change
from tests.support.properties import examples

FILES = 3


@dataclass
class FileModel:
    """One tracked file: original lines plus the user's and the session's line edits.

    Positions: i (an integer) is original line i (replace/delete); i + 0.5 is the gap after
    line i (insert); -0.5 is the top of the file.
    """

    j: int
    n: int
    user: dict[float, tuple[str, bool]] = field(default_factory=dict)  # pos -> (kind, staged)
    session: dict[float, str] = field(default_factory=dict)  # pos -> kind
    user_deleted: str | None = None  # None, "staged" or "unstaged"
    session_deleted: bool = False

    @property
    def name(self) -> str:
        return f"f{self.j}.txt"

    def render(self, view: str, with_session: bool) -> str:
        """The file's text: view is "head", "index" (staged user edits) or "work" (all)."""

        def user_op(pos: float) -> tuple[str, bool] | None:
            op = self.user.get(pos)
            if op is None or view == "head" or (view == "index" and not op[1]):
                return None
            return op

        def gap(pos: float) -> list[str]:
            lines = []
            if user_op(pos):
                lines.append(f"user inserted {self.j}/{pos}\n")
            if with_session and pos in self.session:
                lines.append(f"session inserted {self.j}/{pos}\n")
            return lines

        out = gap(-0.5)
        for i in range(self.n):
            text: str | None = f"file {self.j} line {i}\n"
            op = user_op(float(i))
            if with_session and float(i) in self.session:
                text = None if self.session[float(i)] == "del" else f"session {self.j}/{i}\n"
            elif op is not None:
                kind = op[0]
                if kind == "del":
                    text = None
                elif kind == "rep2" and view == "index":
                    text = f"user staged {self.j}/{i}\n"
                else:
                    text = f"user {self.j}/{i}\n"
            if text is not None:
                out.append(text)
            out.extend(gap(i + 0.5))
        return "".join(out)


def positions(n: int) -> list[float]:
    return [float(i) for i in range(n)] + [i + 0.5 for i in range(-1, n)]


def kind_at(pos: float, pick: int) -> str:
    if pos != int(pos):
        return "ins"
    return ("rep", "del", "rep")[pick % 3]


@st.composite
def scenarios(draw: st.DrawFn, overlap: bool) -> tuple[list[FileModel], dict[str, bool]]:
    files = []
    for j in range(FILES):
        n = draw(st.integers(min_value=4, max_value=9))
        fm = FileModel(j, n)
        whole = draw(st.sampled_from(["edit", "edit", "edit", "delete", "untouched"]))
        if whole == "delete":
            fm.user_deleted = draw(st.sampled_from(["staged", "unstaged"]))
        elif whole == "edit":
            for pos in draw(st.sets(st.sampled_from(positions(n)), max_size=3)):
                kind = kind_at(pos, draw(st.integers(0, 2)))
                staged = draw(st.booleans())
                if kind == "rep" and staged and draw(st.booleans()):
                    kind = "rep2"  # staged one way, then edited again in the work tree
                fm.user[pos] = (kind, staged)
        files.append(fm)
    for fm in files:
        if fm.user_deleted:
            continue
        if not fm.user and draw(st.integers(0, 4)) == 0:
            fm.session_deleted = True
            continue
        free = [p for p in positions(fm.n) if all(abs(p - u) >= 2 for u in fm.user)]
        for pos in draw(st.sets(st.sampled_from(free), max_size=3)) if free else []:
            fm.session[pos] = kind_at(pos, draw(st.integers(0, 2)))
    extras = {
        "user_untracked": draw(st.booleans()),
        "user_staged_new": draw(st.booleans()),
        "session_new": draw(st.booleans()),
    }
    if overlap:
        edited = [fm for fm in files if fm.user and not fm.session_deleted]
        if not edited:
            edited = [files[0]]
            files[0].user_deleted = None
            files[0].user = {1.0: ("rep", draw(st.booleans()))}
        fm = draw(st.sampled_from(edited))
        p = draw(st.sampled_from(sorted(fm.user)))
        near = [p - 1, p - 0.5, p, p + 0.5, p + 1] if p == int(p) else [p - 0.5, p, p + 0.5]
        q = draw(st.sampled_from([x for x in near if -0.5 <= x < fm.n]))
        if q in fm.user and q != p:
            q = p  # the neighbour is itself a user edit: edit the same spot instead
        if q == p and fm.user[p][0] == "del":
            q = p + 0.5  # a deleted line cannot be edited again; insert right after it
        fm.session = {k: v for k, v in fm.session.items() if abs(k - q) >= 2}
        fm.session[q] = kind_at(q, draw(st.integers(0, 2)))
    elif not any(fm.session or fm.session_deleted for fm in files):
        extras["session_new"] = True
    return files, extras


def run_git(root: Path, *args: str, text: bool = True) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def materialize(root: Path, files: list[FileModel], extras: dict[str, bool]) -> None:
    run_git(root, "init", "-q")
    for fm in files:
        (root / fm.name).write_text(fm.render("head", False))
    run_git(root, "add", ".")
    run_git(root, "commit", "-qm", "start")
    for fm in files:
        if fm.user_deleted == "staged":
            run_git(root, "rm", "-q", fm.name)
        elif fm.user_deleted == "unstaged":
            (root / fm.name).unlink()
        elif fm.user:
            (root / fm.name).write_text(fm.render("index", False))
            run_git(root, "add", fm.name)
            (root / fm.name).write_text(fm.render("work", False))
    if extras["user_staged_new"]:
        (root / "staged-new.txt").write_text("user staged a new file\n")
        run_git(root, "add", "staged-new.txt")
    if extras["user_untracked"]:
        (root / "untracked.txt").write_text("user untracked\n")


def session_edits(root: Path, files: list[FileModel], extras: dict[str, bool]) -> None:
    for fm in files:
        if fm.session_deleted:
            (root / fm.name).unlink()
        elif fm.session:
            (root / fm.name).write_text(fm.render("work", True))
    if extras["session_new"]:
        (root / "session-new.txt").write_text("made by the session\n")


def work_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def blob_texts(root: Path, prefix: str, names: list[str]) -> dict[str, str]:
    return {n: run_git(root, "show", f"{prefix}{n}") for n in names}


def commit_session(root: Path) -> None:
    repo = gitrepo.discover(root)
    base = baseline.load(repo, "s")
    ch = change.compute(repo, base)
    plan = commit.build_plan(repo, base, ch)
    commit._publish(repo, plan, "session\n", dict(os.environ))


PROPERTY = settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)


@PROPERTY
@given(scenarios(overlap=False))
def test_disjoint_session_edits_are_committed_exactly_and_user_state_is_kept(
    scenario: tuple[list[FileModel], dict[str, bool]],
) -> None:
    files, extras = scenario
    with tempfile.TemporaryDirectory(prefix="pb-prop-") as tmp:
        root = Path(tmp)
        materialize(root, files, extras)
        baseline.capture(gitrepo.discover(root), session_id="s")
        session_edits(root, files, extras)
        before = work_files(root)
        start = run_git(root, "rev-parse", "HEAD").strip()

        commit_session(root)

        assert run_git(root, "rev-parse", "HEAD~1").strip() == start
        committed = sorted(run_git(root, "ls-tree", "-r", "--name-only", "HEAD").split())
        expect_head = {fm.name: fm.render("head", True) for fm in files if not fm.session_deleted}
        if extras["session_new"]:
            expect_head["session-new.txt"] = "made by the session\n"
        assert committed == sorted(expect_head)
        assert blob_texts(root, "HEAD:", committed) == expect_head
        # The user's index: their staged edits on top of the commit, nothing else.
        indexed = sorted(run_git(root, "ls-files").split())
        expect_index = {
            fm.name: fm.render("index", True)
            for fm in files
            if not fm.session_deleted and fm.user_deleted != "staged"
        }
        if extras["user_staged_new"]:
            expect_index["staged-new.txt"] = "user staged a new file\n"
        if extras["session_new"]:
            expect_index["session-new.txt"] = "made by the session\n"
        assert indexed == sorted(expect_index)
        assert blob_texts(root, ":", indexed) == expect_index
        # The work tree was never written.
        assert work_files(root) == before


@PROPERTY
@given(scenarios(overlap=True))
def test_touching_edits_are_always_refused_and_nothing_changes(
    scenario: tuple[list[FileModel], dict[str, bool]],
) -> None:
    files, extras = scenario
    with tempfile.TemporaryDirectory(prefix="pb-prop-") as tmp:
        root = Path(tmp)
        materialize(root, files, extras)
        baseline.capture(gitrepo.discover(root), session_id="s")
        session_edits(root, files, extras)
        before = work_files(root)
        head = run_git(root, "rev-parse", "HEAD").strip()
        index = (root / ".git/index").read_bytes()

        with pytest.raises(PlanBuildError) as exc:
            commit_session(root)

        assert exc.value.code == ExitCode.BLOCKED
        assert "overlaps work that was uncommitted before it started" in exc.value.what
        assert run_git(root, "rev-parse", "HEAD").strip() == head
        assert (root / ".git/index").read_bytes() == index
        assert work_files(root) == before
