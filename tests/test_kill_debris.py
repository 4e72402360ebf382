"""SIGKILL at several points of `commit` and `baseline`: the next run finishes or discards what
the dead run left (its commit-pending.json, its session ref, its temp index directories and
half-written temp files) and nothing of it is left behind. The commit lands exactly once and
the user's staged edit stays staged."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.support.gitcmd import git
from tests.support.paths import ROOT
from tests.support.pty_run import PtyResult, run_on_pty

KILLPOINT = str(ROOT / "tests" / "support" / "killpoint.py")
APPROVE = [("Nothing is pushed.", "y\n")]
LINES = "".join(f"line {i}\n" for i in range(1, 21))


def run(repo: Path, tmp: Path, *args: str, kill: str | None = None) -> PtyResult:
    argv = (
        [sys.executable, KILLPOINT, kill, *args]
        if kill
        else [sys.executable, "-m", "plan_build", *args]
    )
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp), "PLAN_BUILD_SESSION": ""}
    return run_on_pty(argv, cwd=repo, env=env, typed=APPROVE)


def debris(repo: Path, tmp: Path) -> list[str]:
    """Everything a dead run may leave: temp dirs/files and unfinished-commit records."""
    state = repo / ".git" / "plan-build"
    left = [p.name for p in tmp.iterdir()]
    left += [str(p.relative_to(state)) for p in state.rglob("*") if p.name.endswith(".tmp")]
    left += [str(p.relative_to(state)) for p in state.rglob("commit-pending.json")]
    return left


@pytest.fixture
def session(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A verified session: the user staged an edit to a.txt; the session changed c.txt."""
    for name in ("a.txt", "c.txt"):
        (repo / name).write_text(LINES)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "files")
    (repo / "a.txt").write_text(LINES.replace("line 1\n", "USER\n"))
    git(repo, "add", "a.txt")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    assert run(repo, tmp, "baseline", "--id", "s").code == 0
    (repo / "c.txt").write_text(LINES.replace("line 20\n", "SESSION\n"))
    assert run(repo, tmp, "verify").code == 0
    return repo, tmp


@pytest.mark.parametrize(
    "kill",
    [
        "run:add:1",  # taking the pre-commit snapshot (a temp index directory exists)
        "replace:commit-pending.json:1",  # the pending record half written
        "run:update-ref:1",  # pending written, HEAD not moved yet
        "ran:update-ref:1",  # HEAD moved, the user's index not updated yet
        "replace:baseline.json:1",  # index updated, the session not yet marked committed
        "run:update-ref:2",  # marked committed, the session ref not yet dropped
        "unlink:commit-pending.json:1",  # ref dropped, the pending record not yet removed
    ],
)
def test_after_a_killed_commit_the_next_run_leaves_no_debris(
    session: tuple[Path, Path], kill: str
) -> None:
    repo, tmp = session
    head = git(repo, "rev-parse", "HEAD").strip()

    killed = run(repo, tmp, "commit", "--message", "Session work", kill=kill)
    assert killed.code == -signal.SIGKILL, killed.output

    again = run(repo, tmp, "commit", "--message", "Session work")
    assert again.code in (0, 2), again.output
    assert "Traceback" not in again.output
    assert git(repo, "rev-parse", "HEAD~1").strip() == head  # committed exactly once
    assert git(repo, "show", "HEAD:c.txt") == LINES.replace("line 20\n", "SESSION\n")
    assert git(repo, "show", "HEAD:a.txt") == LINES  # the user's edit is not in the commit
    assert git(repo, "status", "--porcelain") == "M  a.txt\n"  # and still staged
    assert git(repo, "for-each-ref", "refs/plan-build/") == ""  # the session ref is gone
    assert debris(repo, tmp) == []


@pytest.mark.parametrize(
    "kill",
    [
        "run:add:1",  # snapshotting into a temp index
        "run:commit-tree:1",  # pinning the trees
        "replace:baseline.json:1",  # the metadata half written
    ],
)
def test_after_a_killed_baseline_the_next_run_leaves_no_debris(
    repo: Path, tmp_path: Path, kill: str
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (repo / "README.md").write_text("# shop\nuser edit\n")
    git(repo, "add", "README.md")
    killed = run(repo, tmp, "baseline", "--id", "s1", kill=kill)
    assert killed.code == -signal.SIGKILL, killed.output

    again = run(repo, tmp, "baseline", "--id", "s2")
    assert again.code == 0, again.output
    assert run(repo, tmp, "status").code == 0
    assert debris(repo, tmp) == []
    assert git(repo, "status", "--porcelain") == "M  README.md\n"


def test_sweep_removes_only_what_a_gone_owner_left(tmp_path: Path) -> None:
    import subprocess

    from plan_build.core import fsutil

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        import psutil

        started = int(psutil.Process(live.pid).create_time())
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        names = {
            "live": f"plan-build-index-~pb{live.pid}-{started}~abc",  # a running owner
            "reused": f"plan-build-index-~pb{live.pid}-{started - 3600}~abc",  # pid reused
            "dead": f"plan-build-index-~pb{dead}-{started}~abc",  # the owner exited
            "mine": f"plan-build-index{fsutil.owner_tag()}abc",  # this very process
            "foreign": "plan-build-index-abc",  # not named by plan-build's rule: never touched
        }
        for key, name in names.items():
            (tmp_path / name).mkdir() if key != "dead" else (tmp_path / name).write_text("x")
        fsutil.sweep(tmp_path, "plan-build-index")
        left = {key for key, name in names.items() if (tmp_path / name).exists()}
        assert left == {"live", "mine", "foreign"}
    finally:
        live.kill()
        live.wait()


@pytest.mark.skipif(
    not Path("/proc/self/stat").exists(),
    reason="without /proc and without psutil no start time is known: the pid alone decides "
    "(docs/portability.md, temp-file owner tags)",
)
def test_without_psutil_temp_names_still_carry_the_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release zipapp may run on a Python without psutil: writes work, a dead pid counts,
    and the start time still comes from /proc."""
    import psutil

    from plan_build.core import fsutil

    started = int(psutil.Process().create_time())
    monkeypatch.setitem(sys.modules, "psutil", None)
    monkeypatch.setattr(fsutil, "_TAG", [])
    assert fsutil.owner_tag() == f"~pb{os.getpid()}-{started}~"
    fsutil.atomic_write(tmp_path / "f.json", "{}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
    (tmp_path / ".f.json~pb999999999-0~x.tmp").write_text("half")
    fsutil.sweep(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
