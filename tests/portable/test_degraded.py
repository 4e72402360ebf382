"""Inside `nox -s portable`: the facilities really are gone, so the session cannot pass by
running the tests on an ordinary Linux. Skipped elsewhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
import pytest

from plan_build.core import proctree
from tests.portable.degrade import subreaper_refused

pytestmark = pytest.mark.skipif(
    os.environ.get("PB_PORTABLE") != "1", reason="only inside nox -s portable"
)


def test_proc_is_hidden_from_plan_build() -> None:
    assert not Path("/proc/self/stat").exists()
    assert os.listdir("/proc") == []
    assert not proctree.procfs()


def test_the_subreaper_call_fails() -> None:
    assert subreaper_refused()


def test_psutil_and_ps_still_see_processes_through_the_private_procfs() -> None:
    assert psutil.PROCFS_PATH == os.environ["PB_REALPROC"] != "/proc"
    assert psutil.Process().ppid() == os.getppid()
    out = subprocess.run(
        ["ps", "-A", "-o", "pid=,ppid=,pgid="], capture_output=True, text=True, check=True
    ).stdout
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert rows[str(os.getpid())] == [str(os.getppid()), str(os.getpgid(0))]
    assert proctree.process_start(os.getpid()) is not None  # through psutil


def test_preflight_names_the_weaker_hold_on_the_process_tree() -> None:
    assert proctree.supervision_gap() == "/proc is not readable"
