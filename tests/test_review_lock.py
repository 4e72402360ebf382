"""The per-workflow lock: `.lock/pid` as codex-review writes it, stale locks reclaimed by pid
liveness, a live holder refused with the details a user needs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plan_build.core.errors import ExitCode
from plan_build.review.layout import WorkflowDir
from plan_build.review.lock import LockHeld, WorkflowLock, held_by_other


@pytest.fixture
def wdir(tmp_path: Path) -> WorkflowDir:
    w = WorkflowDir(tmp_path, "20261130-101500-a1b2c3")
    w.path.mkdir(parents=True)
    return w


def hold(wdir: WorkflowDir, pid: str, age: float = 0.0) -> None:
    wdir.lock.mkdir()
    (wdir.lock / "pid").write_text(pid)
    if age:
        past = time.time() - age
        os.utime(wdir.lock, (past, past))


def test_acquire_writes_our_pid_and_release_removes_the_dir(wdir: WorkflowDir) -> None:
    with WorkflowLock(wdir):
        assert (wdir.lock / "pid").read_text() == str(os.getpid())  # no newline
        assert held_by_other(wdir) is None
    assert not wdir.lock.exists()
    lock = WorkflowLock(wdir)
    lock.release()  # releasing twice is harmless
    assert wdir.path.exists()


def test_a_live_holder_is_refused_with_its_pid_and_paths(wdir: WorkflowDir) -> None:
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.05)
        hold(wdir, str(holder.pid))
        with pytest.raises(LockHeld) as err:
            WorkflowLock(wdir, owner_cwd="/home/ana/src/shop").acquire()
        text = str(err.value)
        assert err.value.code == ExitCode.BLOCKED
        assert (
            f"workflow '{wdir.id}' is already being reviewed by another process (pid {holder.pid})"
            in text
        )
        for line in (
            f"Project root: {wdir.root}",
            "Owner cwd:    /home/ana/src/shop",
            f"Workflow dir: {wdir.path}",
            f"Lock dir:     {wdir.lock}",
        ):
            assert line in text
        assert (wdir.lock / "pid").read_text() == str(holder.pid)
        assert held_by_other(wdir) == holder.pid
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("content", ["99999999", "garbage", "", "-4"])
def test_a_dead_or_unreadable_holder_is_stale_and_reclaimed(
    wdir: WorkflowDir, content: str
) -> None:
    hold(wdir, content, age=60)
    with WorkflowLock(wdir):
        assert (wdir.lock / "pid").read_text() == str(os.getpid())


def test_a_pid_reused_by_a_newer_process_is_stale(wdir: WorkflowDir) -> None:
    newcomer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        hold(wdir, str(newcomer.pid), age=3600)  # the lock is older than the process
        with WorkflowLock(wdir):
            pass
    finally:
        newcomer.kill()
        newcomer.wait()


def test_a_lock_still_being_written_counts_as_held(wdir: WorkflowDir) -> None:
    wdir.lock.mkdir()
    with pytest.raises(LockHeld, match="a process that is still starting"):
        WorkflowLock(wdir).acquire()
