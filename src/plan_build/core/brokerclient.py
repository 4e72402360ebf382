"""The session broker's spool, and the client side: a command line handed to the broker.

Inside a session, Claude Code runs every tool command in its OS sandbox, where the repository's
git dir, and with it plan-build's state folder, is read-only (docs/adr/0191). plan-build's own
commands that an agent may run (review rounds, verify, status, dispatch...) still have to write
that state, so the launch starts a broker outside the sandbox (startup/broker.py) and exports
its spool folder as PLAN_BUILD_BROKER. `plan-build` run with that variable set hands its
command line to the broker and relays what the run prints and its exit code.

The spool, private to the user (0700), outside the repository and its git dir:

    <base>/requests/   the sandbox may write here (`spool_dir`): `<nonce>.json` (the request,
                       renamed into place whole), `<nonce>.cancel`, `<nonce>.alive` (the
                       client's heartbeat), `<nonce>.done` (the client read the answer)
    <base>/alive       the broker's heartbeat (touched twice a second)
    <base>/answers/    only the broker writes: `<nonce>/stdout`, `<nonce>/stderr`, and
                       `<nonce>/exit` (written last, whole)

Files, not sockets: Claude Code's sandbox on Linux forbids creating unix sockets unless every
one is opened (docker's too). Stdlib only and imported first thing by `plan_build.main`, so the
forwarding costs no import of the rest of plan-build.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from plan_build.core import sessionvars

ENV = sessionvars.BROKER  # the broker's spool base (set by the launch for Claude)
BROKERED = sessionvars.BROKERED  # set by the broker in every run it starts
POLL = 0.02  # seconds between looks at the spool, on both sides
CLAIM_TIMEOUT = 5.0  # a request nobody claims within this: no broker answers
HEARTBEAT = 1.0  # the client touches `<nonce>.alive` this often
STALE = 15.0  # the broker stops a run whose client was silent this long (it was killed)
CANCEL_WAIT = 10.0  # after Ctrl-C, how long the client waits for the broker's exit code
MAX_REQUEST = 64 * 1024
NONCE = re.compile(r"^[0-9a-f]{32}$")
FORMAT = 1


def run_base(env: Mapping[str, str], session_id: str) -> Path:
    """Where the broker of session `session_id` keeps its spool: under XDG_RUNTIME_DIR (a
    private tmpfs) when it is an absolute directory, else under XDG_STATE_HOME/plan-build/run
    (default ~/.local/state)."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / "plan-build" / f"broker-{session_id}"
    state = env.get("XDG_STATE_HOME", "")
    if not (state and os.path.isabs(state)):
        state = str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(state) / "plan-build" / "run" / f"broker-{session_id}"


def requests_dir(base: Path) -> Path:
    return base / "requests"


def answers_dir(base: Path) -> Path:
    return base / "answers"


def spool_dir(env: Mapping[str, str], session_id: str) -> Path:
    """The one folder a session's sandbox must be able to write for the broker to hear it
    (the sandbox's allowWrite list names it; the answers beside it stay read-only)."""
    return requests_dir(run_base(env, session_id))


# --- the client ----------------------------------------------------------------------------


class _Stop(Exception):
    """A signal asked the client to stop: it cancels the run and waits for the broker."""


def _signalled(signum: int, _frame: FrameType | None) -> None:
    raise _Stop(signum)


def _write_whole(path: Path, data: bytes) -> None:
    """Write `path` under a temporary name, then rename it into place (readers never see a
    partial file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _touch(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        os.utime(path)
    except OSError:
        pass


class _Tail:
    """One output file of the run, copied to our stream as it grows."""

    def __init__(self, path: Path, out: BinaryIO) -> None:
        self.path, self.out = path, out
        self.fh: BinaryIO | None = None
        self.broken = False

    def pump(self) -> None:
        if self.fh is None:
            try:
                self.fh = open(self.path, "rb")  # noqa: SIM115 - kept open while the run lasts
            except FileNotFoundError:
                return
        data = self.fh.read()
        if data and not self.broken:
            try:
                self.out.write(data)
                self.out.flush()
            except OSError:  # the reader went away (`| head`): the run goes on unread
                self.broken = True

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def _fail(err: BinaryIO, what: str, fix: str) -> int:
    err.write(f"plan-build: {what}\n  fix: {fix}\n".encode())
    err.flush()
    return 6  # ExitCode.BLOCKED (errors.py is not imported here: the client stays light)


def forward(
    argv: list[str],
    base: Path,
    *,
    cwd: str | None = None,
    out: BinaryIO | None = None,
    err: BinaryIO | None = None,
    claim_timeout: float = CLAIM_TIMEOUT,
) -> int:
    """Hand `argv` (plan-build's arguments) to the broker at `base`, relay the run's stdout and
    stderr as they come, and return its exit code."""
    out = out if out is not None else sys.stdout.buffer
    err = err if err is not None else sys.stderr.buffer
    requests, answers = requests_dir(base), answers_dir(base)
    nonce = os.urandom(16).hex()
    request = requests / f"{nonce}.json"
    answer = answers / nonce
    body = {"format": FORMAT, "argv": list(argv), "cwd": cwd or os.getcwd()}
    try:
        _write_whole(request, json.dumps(body).encode("utf-8"))
    except OSError as exc:
        return _fail(
            err,
            f"plan-build's broker for this session cannot be reached: {requests} is not "
            f"writable ({exc.strerror or exc})",
            "this command runs through the broker the session's launch started; restart the "
            "session (plan-build plan or architect), or run the command in your own terminal",
        )
    previous = {s: signal.signal(s, _signalled) for s in _SIGNALS}
    try:
        return _await(request, answer, out, err, claim_timeout)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _touch(requests / f"{nonce}.done")


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _await(request: Path, answer: Path, out: BinaryIO, err: BinaryIO, claim_timeout: float) -> int:
    nonce = request.name.removesuffix(".json")
    tails = [_Tail(answer / "stdout", out), _Tail(answer / "stderr", err)]
    started = time.monotonic()
    beat = 0.0
    cancelled_at: float | None = None
    try:
        while True:
            try:
                now = time.monotonic()
                code = _answered(answer, tails)
                if code is not None:
                    return code
                if now - started > claim_timeout and not answer.is_dir() and _withdraw(request):
                    return _unanswered(err, request, claim_timeout)
                if now - beat >= HEARTBEAT:
                    _touch(request.with_name(f"{nonce}.alive"))
                    beat = now
                    if answer.is_dir() and _stale(request.parent.parent / "alive"):
                        return _fail(
                            err,
                            "the session's broker stopped while it ran this command",
                            "run the command again; if the broker is gone, restart the session "
                            "(plan-build plan or architect) or run it in your own terminal",
                        )
                if cancelled_at is not None and now - cancelled_at > CANCEL_WAIT:
                    err.write(b"\nplan-build: interrupted\n")
                    return 130
                time.sleep(POLL)
            except _Stop:
                if cancelled_at is None:
                    cancelled_at = time.monotonic()
                    _touch(request.with_name(f"{nonce}.cancel"))
                    if _withdraw(request):  # never claimed: nothing ran
                        err.write(b"\nplan-build: interrupted\n")
                        return 130
    finally:
        for tail in tails:
            tail.close()


def _answered(answer: Path, tails: list[_Tail]) -> int | None:
    """Copy what the run printed since the last look; its exit code once it has one."""
    if not answer.is_dir():
        return None
    for tail in tails:
        tail.pump()
    code = _exit_code(answer / "exit")
    if code is not None:
        for tail in tails:  # what it printed between our look and its end
            tail.pump()
    return code


def _unanswered(err: BinaryIO, request: Path, claim_timeout: float) -> int:
    return _fail(
        err,
        f"no plan-build broker answered within {claim_timeout:g}s "
        f"({request.parent.parent} is the session's broker spool)",
        "the broker the launch started has stopped; restart the session (plan-build plan or "
        "architect), or run the command in your own terminal",
    )


def _stale(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > STALE
    except FileNotFoundError:
        return True


def _withdraw(request: Path) -> bool:
    """Take back a request the broker has not claimed; False when it already took it."""
    try:
        request.unlink()
    except FileNotFoundError:
        return False
    return True


def _exit_code(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    try:
        return int(text.strip())
    except ValueError:
        return 1


__all__ = [
    "BROKERED",
    "ENV",
    "answers_dir",
    "forward",
    "requests_dir",
    "run_base",
    "spool_dir",
]
