"""The one lock type (plan_build.core.locks): one holder across processes, the holder named when
another is refused or waits, a killed holder's lock free again with its record handed over,
and the pid-reuse rule every lock uses to decide whether a recorded owner still runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from plan_build.core.errors import ExitCode
from plan_build.core.locks import FileLock, LockBusy, me, owner_alive, parse_record

HOLD = """
import sys, time
from pathlib import Path
from plan_build.core.locks import FileLock
lock = FileLock(Path(sys.argv[1]), shared=sys.argv[2] == "shared")
lock.acquire(wait=True, task="T-1")
print("locked", flush=True)
time.sleep(60)
"""


def holder(path: Path, *, shared: bool = False) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), "shared" if shared else "exclusive"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "locked"
    return child


def stop(child: subprocess.Popen[str]) -> None:
    child.kill()
    child.wait()
    if child.stdout is not None:
        child.stdout.close()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child
    child.kill()
    child.wait()


def test_a_second_process_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    child = holder(path)
    try:
        with pytest.raises(LockBusy) as caught:
            FileLock(path).acquire()
        assert f"is held by another process (pid {child.pid})" in caught.value.what
        assert caught.value.code == ExitCode.BLOCKED
        assert caught.value.holder["task"] == "T-1"
        assert json.loads(path.read_text())["pid"] == child.pid  # its record is untouched
    finally:
        stop(child)


def test_the_caller_words_the_refusal(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    child = holder(path)
    try:
        with pytest.raises(RuntimeError, match=rf"busy: T-1 {child.pid}"):
            FileLock(path).acquire(busy=lambda r: RuntimeError(f"busy: {r['task']} {r['pid']}"))
    finally:
        stop(child)


def test_a_waiting_acquire_says_whom_it_waits_for_then_proceeds(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    child = holder(path)
    told: list[int] = []

    def waiting(record: dict[str, object]) -> None:
        told.append(int(str(record["pid"])))
        stop(child)  # the holder finishes while we wait

    lock = FileLock(path)
    try:
        assert lock.acquire(wait=True, on_wait=waiting, task="T-2") is not None
        assert told == [child.pid]
        assert json.loads(path.read_text())["task"] == "T-2"
    finally:
        lock.release()
        stop(child)


def test_a_killed_holder_frees_the_lock_and_its_record_is_handed_over(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    child = holder(path)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    lock = FileLock(path)
    try:
        previous = lock.acquire(task="T-2")
        assert previous is not None
        assert (previous["pid"], previous["task"]) == (child.pid, "T-1")
        assert json.loads(path.read_text()) == {**me(), "task": "T-2"}
    finally:
        lock.release()
    stop(child)


def test_release_empties_the_record_or_removes_the_file(tmp_path: Path) -> None:
    kept, removed = FileLock(tmp_path / "kept"), FileLock(tmp_path / "gone", remove=True)
    for lock in (kept, removed):
        assert lock.acquire() is None  # nobody held it before
        lock.release()
        lock.release()  # twice is harmless
    assert (tmp_path / "kept").read_text() == ""
    assert not (tmp_path / "gone").exists()
    assert kept.acquire() is None  # an emptied record names nobody to clean up after
    kept.release()


def test_a_removed_lock_file_is_not_held_by_two_processes(tmp_path: Path) -> None:
    """A waiter that gets the flock of a file its holder removed locks the file now there."""
    path = tmp_path / "x.lock"
    first = FileLock(path, remove=True)
    first.acquire()
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), "exclusive"], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.5)  # the child now waits on the first file
        first.release()
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(LockBusy):
            FileLock(path, remove=True).acquire()
    finally:
        stop(child)


def test_update_rewrites_the_record_while_held(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with FileLock(path) as lock:
        lock.update(group={"pgid": 123, "started": 1.5}, task="a long task name")
        assert json.loads(path.read_text())["group"] == {"pgid": 123, "started": 1.5}
        lock.update(task="t")  # shorter: nothing of the longer record is left behind
        assert json.loads(path.read_text()) == {
            **me(),
            "group": {"pgid": 123, "started": 1.5},
            "task": "t",
        }


def test_programs_the_holder_runs_do_not_inherit_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    lock = FileLock(path)
    lock.acquire()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], close_fds=False)
    try:
        lock.release()
        again = FileLock(path)
        again.acquire()  # the child still runs, but never held the lock
        again.release()
    finally:
        child.kill()
        child.wait()


def test_shared_holders_coexist_and_keep_an_exclusive_one_out(tmp_path: Path) -> None:
    path = tmp_path / "bind.lock"
    path.touch()
    child = holder(path, shared=True)
    try:
        with FileLock(path, shared=True):
            pass
        with pytest.raises(LockBusy):
            FileLock(path).acquire()
    finally:
        stop(child)
    with FileLock(path):
        pass


# ------------------------------------------------------------- records nobody flocks


def test_a_trusted_record_of_a_live_process_holds_the_lock(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """What an earlier version's O_EXCL lock file (no flock) means while its writer runs."""
    path = tmp_path / "x.lock"
    path.write_text(json.dumps({"pid": sleeper.pid, "task": "T-1"}))
    with pytest.raises(LockBusy) as caught:
        FileLock(path, trust_record=True).acquire()
    assert caught.value.holder == {"pid": sleeper.pid, "task": "T-1"}


def test_a_record_whose_pid_was_reused_is_taken_over(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    path = tmp_path / "x.lock"
    wrong = psutil.Process(sleeper.pid).create_time() - 100
    path.write_text(json.dumps({"pid": sleeper.pid, "started": wrong, "task": "T-1"}))
    lock = FileLock(path, trust_record=True)
    assert lock.acquire() == {"pid": sleeper.pid, "started": wrong, "task": "T-1"}
    lock.release()


def test_a_record_without_start_time_older_than_its_pids_process_is_taken_over(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    path = tmp_path / "x.lock"
    path.write_text(json.dumps({"pid": sleeper.pid}))
    past = time.time() - 100  # written long before that process started
    os.utime(path, (past, past))
    lock = FileLock(path, trust_record=True)
    assert lock.acquire() == {"pid": sleeper.pid}
    lock.release()


def test_a_record_of_a_dead_process_is_taken_over_and_handed_over(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = tmp_path / "x.lock"
    path.write_text(json.dumps({"pid": dead.pid, "group": {"pgid": 1}}))
    lock = FileLock(path, trust_record=True, remove=True)
    assert lock.acquire() == {"pid": dead.pid, "group": {"pgid": 1}}
    lock.release()


def test_records_earlier_locks_wrote_are_read() -> None:
    assert parse_record(b"4242\n") == {"pid": 4242}
    assert parse_record(b'{"pid": 7, "task": "t"}{"pid": 7, "tas') == {"pid": 7, "task": "t"}
    assert parse_record(b"") is None
    assert parse_record(b"garbage") is None
    assert parse_record(b"[1]") is None


# ----------------------------------------------------------------------------- the rule


def test_the_owner_rule(sleeper: subprocess.Popen[bytes]) -> None:
    began = psutil.Process(sleeper.pid).create_time()
    assert owner_alive(sleeper.pid)
    assert owner_alive(sleeper.pid, began + 0.5)
    assert not owner_alive(sleeper.pid, began - 100)  # the pid names another process now
    assert owner_alive(sleeper.pid, written=began + 10)
    assert not owner_alive(sleeper.pid, written=began - 100)
    assert not owner_alive(0)
    assert not owner_alive(-1)


def test_a_dead_or_zombie_owner_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert not owner_alive(child.pid)  # exited, not yet reaped
    child.wait()
    assert not owner_alive(child.pid)
