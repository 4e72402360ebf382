"""The process seam: argument lists, closed stdin, timeouts that kill the whole tree."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from plan_build.core import proc
from tests.support.orphans import alive

PY = sys.executable


def test_stdin_is_closed_unless_input_is_meant() -> None:
    r = proc.run([PY, "-c", "import sys; print(repr(sys.stdin.read()))"], timeout=10)
    assert r.stdout == "''\n"
    r = proc.run([PY, "-c", "import sys; print(sys.stdin.read())"], input="hello", timeout=10)
    assert r.stdout == "hello\n"


def test_a_missing_program_is_a_clear_error() -> None:
    with pytest.raises(proc.CommandNotFound) as err:
        proc.run(["no-such-tool-xyz", "--version"])
    assert str(err.value) == (
        "no-such-tool-xyz is not installed or not on PATH\n"
        "  fix: install no-such-tool-xyz or add its directory to PATH"
    )


def test_timeout_kills_the_child_and_a_grandchild_that_ignores_sigterm(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild"
    script = (
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'], start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(proc.CommandTimeout) as err:
        proc.run([PY, "-c", script], timeout=1.5)
    assert time.monotonic() - started < 15
    assert "did not finish within 1.5s" in err.value.what
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_heartbeat_is_called_while_a_long_command_runs() -> None:
    beats: list[float] = []
    r = proc.run(
        [PY, "-c", "import time; time.sleep(0.7)"],
        timeout=10,
        heartbeat=beats.append,
        heartbeat_every=0.2,
    )
    assert r.ok
    assert len(beats) >= 2
    assert beats == sorted(beats)


def test_run_bytes_keeps_exact_bytes() -> None:
    data = b"a\r\nb\x00\xff\n"
    r = proc.run_bytes(
        [PY, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
        input=data,
        timeout=10,
    )
    assert r.stdout == data


def test_check_raises_with_the_tail_of_stderr() -> None:
    with pytest.raises(proc.CommandFailed) as err:
        proc.run([PY, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"], check=True)
    assert "exited 3" in err.value.what
    assert "boom" in err.value.what


def test_no_other_module_imports_subprocess() -> None:
    src = Path(proc.__file__).parent
    offenders = [
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        # supervisor.py holds a separate program (python -I -S) that cannot import proc: it
        # runs `ps` itself where there is no /proc
        if p.name not in ("proc.py", "supervisor.py")
        and any(
            line.strip().startswith(("import subprocess", "from subprocess"))
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []
    assert os.path.basename(proc.__file__) == "proc.py"


# ----------------------------------------------------------------------------- supervised


def test_a_supervised_command_keeps_its_output_exit_code_and_pid() -> None:
    seen: list[int] = []
    r = proc.run(
        [PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
        timeout=10,
        supervised=True,
        on_start=seen.append,
    )
    assert (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n")
    assert r.argv[0] == PY  # the command as asked, not the supervisor
    assert len(seen) == 1
    assert os.getpgid(os.getpid()) != seen[0]  # its own group, led by the supervisor
    with pytest.raises(proc.CommandNotFound):
        proc.run(["no-such-tool-xyz"], supervised=True)


def test_a_supervised_commands_background_children_end_with_it(tmp_path: Path) -> None:
    """What the command leaves behind (even in a session of its own) cannot outlive it."""
    pidfile = tmp_path / "bg"
    script = (
        "import subprocess, sys\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'], start_new_session=True,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
    )
    r = proc.run([PY, "-c", script], timeout=20, supervised=True)
    assert r.returncode == 0
    assert not alive(int(pidfile.read_text()))


@pytest.mark.parametrize(
    ("value", "grace"),
    [
        ("0.5", 0.5),
        ("10", 10.0),
        ("0", proc.KILL_GRACE),
        ("nan", proc.KILL_GRACE),
        ("inf", proc.KILL_GRACE),
        ("soon", proc.KILL_GRACE),
        ("11", proc.KILL_GRACE),
    ],
)
def test_the_kill_grace_can_be_shortened_but_only_to_a_sane_number(
    monkeypatch: pytest.MonkeyPatch, value: str, grace: float
) -> None:
    monkeypatch.setenv("PLAN_BUILD_KILL_GRACE", value)
    assert proc.kill_grace() == grace
    monkeypatch.delenv("PLAN_BUILD_KILL_GRACE")
    assert proc.kill_grace() == proc.KILL_GRACE == 2.0


def test_head_bytes_gives_a_short_output_whole() -> None:
    data, whole = proc.head_bytes([sys.executable, "-c", "print('x' * 99)"], limit=1000)
    assert (data, whole) == (b"x" * 99 + b"\n", True)


def test_head_bytes_stops_a_command_once_it_has_given_more_than_the_limit(
    tmp_path: Path,
) -> None:
    """A report needs the start of a diff of thousands of files: the command is stopped, not
    waited for (this one would write for a minute)."""
    pidfile = tmp_path / "pid"
    script = (
        "import os, sys, time\n"
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "end = time.monotonic() + 60\n"
        "while time.monotonic() < end:\n"
        "    sys.stdout.write('y' * 65536)\n"
    )
    started = time.monotonic()
    data, whole = proc.head_bytes([sys.executable, "-c", script], limit=200_000, timeout=30)
    assert time.monotonic() - started < 15
    assert (len(data), whole) == (200_000, False)
    assert set(data) == {ord("y")}
    assert not alive(int(pidfile.read_text()))


def test_head_bytes_reports_a_failure_and_a_timeout() -> None:
    with pytest.raises(proc.CommandFailed):
        proc.head_bytes([sys.executable, "-c", "import sys; sys.exit(3)"], limit=10)
    with pytest.raises(proc.CommandTimeout):
        proc.head_bytes(
            [sys.executable, "-c", "import time; time.sleep(30)"], limit=10, timeout=0.5
        )
