"""The dispatch lock (dispatch/lock.py) on its own: a running dispatch is named in the
refusal, and the process group it runs is recorded for a later takeover."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.dispatch.lock import DispatchLock


def test_a_running_dispatch_is_named_in_the_refusal(tmp_path: Path) -> None:
    path = tmp_path / "dispatch" / "lock"
    first = DispatchLock(path, "TASK-001")
    assert first.acquire() == []
    try:
        with pytest.raises(PlanBuildError) as caught:
            DispatchLock(path, "TASK-002").acquire()
        assert (
            caught.value.what
            == f"another dispatch is running (TASK-001, pid {psutil.Process().pid})"
        )
        assert caught.value.fix == "wait for it to finish; one task runs at a time"
        assert caught.value.code == ExitCode.USAGE
    finally:
        first.release()
    assert not path.exists()


def test_the_running_group_is_recorded_for_a_later_takeover(tmp_path: Path) -> None:
    path = tmp_path / "dispatch" / "lock"
    codex = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    lock = DispatchLock(path, "TASK-001")
    try:
        lock.acquire()
        lock.record_group(codex.pid)
        record = json.loads(path.read_text())
        assert record["task"] == "TASK-001"
        assert record["group"] == {
            "pgid": codex.pid,
            "started": psutil.Process(codex.pid).create_time(),
        }
    finally:
        lock.release()
        codex.kill()
        codex.wait()
