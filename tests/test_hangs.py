"""A test that hangs stops the run and says where: every thread's stack and the process tree
(pytest-timeout, plus tests/support/hangs.py), instead of a CI job that never ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_hung_test_prints_its_process_tree_and_every_threads_stack(tmp_path: Path) -> None:
    (tmp_path / "test_stuck.py").write_text(
        "import subprocess, sys, time\n"
        "def test_stuck():\n"
        "    kid = 'import time; time.sleep(20)  # kid'\n"
        "    child = subprocess.Popen([sys.executable, '-c', kid])\n"
        "    time.sleep(30)\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", "/dev/null", "-p", "tests.support.hangs",
         "--timeout", "1", "--timeout-method", "thread", "-p", "no:randomly", "-p", "no:xdist",
         str(tmp_path / "test_stuck.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "Timeout after 1.0 s: process tree" in out
    assert "time.sleep(20)  # kid" in out  # the child, by its command line
    assert "Stack of MainThread" in out
    assert "test_stuck.py" in out
