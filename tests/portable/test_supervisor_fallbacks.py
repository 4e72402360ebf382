"""The supervisor without a subreaper: what a supervised command leaves behind still ends with it.

On Linux the subreaper keeps every orphan findable by parentage; in `nox -s portable` (and on
macOS) it is refused, so these cases lean on the fallbacks: the pids seen while polling, the
mark in the command's environment, and the groups a descendant leads. A stranger is never hit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from plan_build.core import proc
from tests.support.orphans import alive

PY = sys.executable

# The command forks a child that starts a grandchild in a session of its own and exits at once:
# the grandchild is re-parented to init before the supervisor's first poll can see it.
QUICK_ORPHAN = (
    "import os, subprocess, sys\n"
    "if os.fork() == 0:\n"
    "    g = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'], start_new_session=True,"
    " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "    open({pidfile!r}, 'w').write(str(g.pid))\n"
    "    os._exit(0)\n"
    "os.wait()\n"
)


def _wait_for(path: Path) -> int:
    deadline = time.monotonic() + 10
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path.name} was never written"
        time.sleep(0.02)
    return int(path.read_text())


def test_an_orphan_that_left_the_session_before_any_poll_is_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "orphan"
    r = proc.run([PY, "-c", QUICK_ORPHAN.format(pidfile=str(pidfile))], timeout=20, supervised=True)
    assert r.returncode == 0
    assert not alive(int(pidfile.read_text()))


def test_an_orphan_that_cleared_its_environment_is_stopped_once_seen(tmp_path: Path) -> None:
    """The mark is gone, the parent is gone: the pid the poll remembered still names it."""
    pidfile = tmp_path / "orphan"
    script = (
        "import os, subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'], start_new_session=True,"
        " env={'PATH': '/usr/bin:/bin'}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "time.sleep(1.5)\n"  # several polls
    )
    r = proc.run([PY, "-c", script], timeout=20, supervised=True)
    assert r.returncode == 0
    assert not alive(int(pidfile.read_text()))


def test_sigkill_of_the_caller_still_stops_a_quick_orphan(tmp_path: Path) -> None:
    """plan-build SIGKILLed mid-command: the lifeline breaks and the supervisor cleans up."""
    pidfile = tmp_path / "orphan"
    command = QUICK_ORPHAN.format(pidfile=str(pidfile)) + "import time; time.sleep(60)\n"
    caller = (
        "import sys\n"
        "from plan_build.core import proc\n"
        f"proc.run([sys.executable, '-c', {command!r}], timeout=120, supervised=True)\n"
    )
    p = subprocess.Popen([PY, "-c", caller])
    orphan = _wait_for(pidfile)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 15
    while alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(orphan)


def test_a_stranger_with_another_supervisors_mark_is_left_alone(tmp_path: Path) -> None:
    stranger = subprocess.Popen(
        [PY, "-c", "import time; time.sleep(60)"],
        env=dict(os.environ, PB_SUPERVISOR="0" * 32),
        start_new_session=True,
    )
    try:
        r = proc.run([PY, "-c", "pass"], timeout=20, supervised=True)
        assert r.returncode == 0
        assert alive(stranger.pid)
    finally:
        stranger.kill()
        stranger.wait()
