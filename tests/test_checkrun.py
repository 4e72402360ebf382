"""One project check command to an outcome: what dispatch and verify report for each case."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import proc
from plan_build.core.checkrun import CheckRun, run_check

PY = sys.executable


def stub(tmp_path: Path, name: str, body: str, *, executable: bool = True) -> Path:
    path = tmp_path / name
    path.write_text(f"#!{PY}\n{body}", encoding="utf-8")
    path.chmod(0o755 if executable else 0o644)
    return path


def check(argv: list[str], tmp_path: Path, **kwargs: Any) -> CheckRun:
    return run_check(argv, cwd=tmp_path, env=dict(os.environ), **{"policy": None, **kwargs})


def test_a_passing_check_keeps_its_output_and_exit_code(tmp_path: Path) -> None:
    tool = stub(tmp_path, "ok-check", "import sys; print('fine'); print('note', file=sys.stderr)")
    r = check([str(tool)], tmp_path, timeout=10)
    assert (r.returncode, r.ok, r.stdout, r.stderr) == (0, True, "fine\n", "note\n")
    assert not (r.timed_out)
    assert not (r.not_found)
    assert r.error is None
    assert r.argv == (str(tool),)
    assert r.seconds > 0


def test_a_failing_check_reports_its_exit_code(tmp_path: Path) -> None:
    tool = stub(tmp_path, "bad-check", "import sys; print('2 failed'); sys.exit(3)")
    r = check([str(tool)], tmp_path, timeout=10)
    assert (r.returncode, r.ok, r.stdout) == (3, False, "2 failed\n")
    assert r.error is None


def test_a_check_that_outlives_its_timeout_is_stopped_with_what_it_printed(
    tmp_path: Path,
) -> None:
    tool = stub(tmp_path, "slow-check", "import time; print('started', flush=True); time.sleep(60)")
    r = check([str(tool)], tmp_path, timeout=1.0)
    assert r.timed_out
    assert r.returncode is None
    assert not r.ok
    assert "started" in r.stdout
    assert 1.0 <= r.seconds < 15


def test_a_missing_check_is_not_found_not_an_error_that_stops(tmp_path: Path) -> None:
    r = check(["no-such-check-xyz", "--all"], tmp_path, timeout=10)
    assert r.not_found
    assert r.returncode is None
    assert not r.timed_out
    assert r.error == "no-such-check-xyz is not installed or not on PATH"
    assert r.fix is not None


def test_a_check_that_is_not_executable_says_why_it_did_not_start(tmp_path: Path) -> None:
    tool = stub(tmp_path, "plain-file", "print('never')", executable=False)
    r = check([str(tool)], tmp_path, timeout=10)
    assert r.returncode is None
    assert not (r.not_found)
    assert not (r.timed_out)
    assert r.error is not None
    assert "plain-file" in r.error


def test_a_long_check_sends_heartbeats_while_it_runs(tmp_path: Path) -> None:
    tool = stub(tmp_path, "long-check", "import time; time.sleep(1.2)")
    beats: list[float] = []
    r = check([str(tool)], tmp_path, timeout=10, heartbeat=beats.append, heartbeat_every=0.3)
    assert r.ok
    assert len(beats) >= 2
    assert beats == sorted(beats)


def test_a_supervised_check_reports_its_process_group_when_it_starts(tmp_path: Path) -> None:
    tool = stub(tmp_path, "group-check", "import os; print(os.getpgid(0))")
    started: list[int] = []
    r = check([str(tool)], tmp_path, timeout=10, supervised=True, on_start=started.append)
    assert r.ok
    assert started == [int(r.stdout)]


def test_a_stop_on_purpose_is_not_turned_into_a_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cancelled(argv: object, **kwargs: object) -> proc.Completed:
        raise proc.CommandCancelled(["x"])

    monkeypatch.setattr(proc, "run", cancelled)
    with pytest.raises(proc.CommandCancelled):
        check(["x"], tmp_path, timeout=10)
