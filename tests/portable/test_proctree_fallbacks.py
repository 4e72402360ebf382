"""Start times, zombies and ancestry without /proc: psutil gives the answer /proc gives.

Each test reads the real procfs for the reference (`PB_REALPROC` inside `nox -s portable`, where
/proc itself is an empty tmpfs; /proc elsewhere) and asks proctree with its /proc taken away.
Without the psutil fallbacks these answers would be None, and pid reuse would go unnoticed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_build.core import claudesessions, locks, proctree

REAL = Path(os.environ.get("PB_REALPROC", "/proc"))

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not (REAL / "self" / "stat").exists(),
    reason="compares with Linux's procfs",
)


def real_ticks(pid: int) -> str:
    return (REAL / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """proctree with an empty directory where /proc was (what macOS looks like to it)."""
    monkeypatch.setattr(proctree, "PROC", tmp_path)
    monkeypatch.setattr(proctree, "_BOOT", [])
    assert not proctree.procfs()
    return tmp_path


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    yield p
    p.kill()
    p.wait()


def test_psutil_gives_claudes_clock_tick_start_time(
    no_proc: Path, child: subprocess.Popen[bytes]
) -> None:
    for pid in (os.getpid(), os.getppid(), child.pid):
        assert proctree.process_start(pid) == real_ticks(pid)


def test_psutil_gives_the_same_create_time(child: subprocess.Popen[bytes], no_proc: Path) -> None:
    boot = next(
        float(line.split()[1])
        for line in (REAL / "stat").read_text().splitlines()
        if line.startswith("btime ")
    )
    for pid in (os.getpid(), child.pid):
        expected = boot + int(real_ticks(pid)) / os.sysconf("SC_CLK_TCK")
        got = proctree.create_time(pid)
        assert got is not None
        assert abs(got - expected) < 0.02


def test_a_gone_process_has_no_start_time(no_proc: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert proctree.process_start(p.pid) is None
    assert proctree.create_time(p.pid) is None


def test_ancestry_and_zombies_without_proc(no_proc: Path) -> None:
    ppid = int((REAL / "self" / "stat").read_text().rsplit(")", 1)[1].split()[1])
    assert proctree.ancestors()[0] == ppid == os.getppid()
    z = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while not proctree.zombie(z.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proctree.zombie(z.pid)  # exited, not reaped yet
    assert not locks.owner_alive(z.pid)
    z.wait()


def test_pid_reuse_is_still_detected(no_proc: Path, child: subprocess.Popen[bytes]) -> None:
    began = proctree.create_time(child.pid)
    assert began is not None
    assert locks.owner_alive(child.pid, began)
    assert not locks.owner_alive(child.pid, began - 5)  # a record of the pid's earlier owner
    ticks = real_ticks(child.pid)
    live = {"pid": child.pid, "entrypoint": "cli", "procStart": ticks}
    assert claudesessions.why_not_live(live, child.pid) is None
    reused = dict(live, procStart=str(int(ticks) - 100))
    assert "pid reused" in (claudesessions.why_not_live(reused, child.pid) or "")


def test_linux_with_proc_and_a_subreaper_has_no_gap() -> None:
    if os.environ.get("PB_PORTABLE") == "1":
        pytest.skip("the portable session takes both away")
    assert proctree.supervision_gap() is None


def test_on_macos_a_reused_pid_is_caught_by_the_start_time_claude_records(
    no_proc: Path, child: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS has no clock-tick start: `procStart` cannot be compared, `startedAt` (ms) is."""
    monkeypatch.setattr(proctree.sys, "platform", "darwin")
    assert proctree.process_start(child.pid) is None
    began = proctree.create_time(child.pid)
    assert began is not None
    live = {"pid": child.pid, "entrypoint": "cli", "procStart": "123", "startedAt": began * 1000}
    assert claudesessions.why_not_live(live, child.pid) is None
    earlier = dict(live, startedAt=(began - 3600) * 1000)  # the pid's owner an hour ago
    assert "pid reused" in (claudesessions.why_not_live(earlier, child.pid) or "")
