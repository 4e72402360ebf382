"""A release's zipapp may run on a Python without psutil (its native code cannot be bundled):
timeouts must still stop the child's whole process group."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from plan_build.core import proc


def test_a_timeout_without_psutil_stops_the_child_and_its_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # `import psutil` now fails
    pids = tmp_path / "pids"
    script = (
        "import os, subprocess, sys, time\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{kid.pid}}')\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(proc.CommandTimeout):
        proc.run([sys.executable, "-c", script], timeout=1.0)
    assert time.monotonic() - started < 10
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"pid {pid} survived the timeout")
