"""One project check command run to an outcome: the shared core of dispatch's verification
and delivery's `verify` commands.

Both run a command the project configured (a test suite, a linter) with a timeout and a
heartbeat, and both must report a check that timed out, is missing or cannot start as a failed
check rather than an error that stops plan-build. `run_check` does that translation once; each
caller turns the `CheckRun` into its own row and words.

Every check runs under the session's sandbox policy (core/sandbox.py, docs/adr/0190): the
files a check runs (a test suite, a conftest.py, a script) are the agent's to write, so what the
check's processes cannot do is what keeps it from committing, pushing or rewriting git state.
The caller passes the policy; None only for a session a person launched unguarded. A check the
sandbox refused says so in one line (`denied`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from plan_build.core import fsutil, proc, sandbox
from plan_build.core.errors import PlanBuildError


@dataclass(frozen=True)
class CheckRun:
    """What one check command did. `returncode` is None when it never finished: it timed out
    (`timed_out`, with what it printed before the stop in `stdout`), is not installed
    (`not_found`), or could not start (`error`, with plan-build's `fix`)."""

    argv: tuple[str, ...]
    returncode: int | None
    seconds: float
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    not_found: bool = False
    error: str | None = None
    fix: str | None = None
    denied: str | None = None  # what the sandbox refused the check, in one line

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_check(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float,
    heartbeat: Callable[[float], None] | None = None,
    heartbeat_every: float = 30.0,
    supervised: bool = False,
    on_start: Callable[[int], None] | None = None,
    cancel: threading.Event | None = None,
    policy: sandbox.Policy | None,
) -> CheckRun:
    """Run one check command to a CheckRun; only a stop on purpose (proc.CommandCancelled) and
    interruptions propagate, since they end the whole step, not this check. With a `policy`
    the command runs under bubblewrap with it (a missing bubblewrap is a check that could not
    start, with the fix); `policy=None` runs it as it is (an unguarded session)."""
    args = tuple(argv)
    started = time.monotonic()
    beat = _Beat(heartbeat, heartbeat_every, supervised, on_start, cancel)
    if policy is None:
        return _run(args, args, cwd=cwd, env=env, timeout=timeout, started=started, beat=beat)
    found = _resolve(args[0], env, cwd) if args else None
    if found is None:
        missing = proc.CommandNotFound(args[0] if args else "(empty)")
        return CheckRun(args, None, 0.0, not_found=True, error=missing.what, fix=missing.fix)
    if not os.access(found, os.X_OK):
        return CheckRun(
            args, None, 0.0, error=f"{found} is not executable", fix=f"chmod +x {found}"
        )
    layer_bwrap = proc.which("bwrap", env)
    if layer_bwrap is None:
        why = sandbox.unavailable(sandbox.Layer(None, None, "bubblewrap not installed"))
        return CheckRun(args, None, 0.0, error=why.what, fix=why.fix)
    with fsutil.owned_tempdir("plan-build-check-") as tmp:
        wrapped = sandbox.wrap(
            policy, [found, *args[1:]], cwd=Path(cwd).resolve(), tmp=tmp, bwrap=layer_bwrap
        )
        inside = sandbox.check_env(env, tmp)
        run = _run(
            args, tuple(wrapped), cwd=cwd, env=inside, timeout=timeout, started=started, beat=beat
        )
    if run.ok:
        return run
    if run.returncode == 1 and not run.stdout and run.stderr.startswith("bwrap:"):
        first = run.stderr.strip().splitlines()[0]
        cannot = sandbox.unavailable(sandbox.Layer(layer_bwrap, None, first))
        return replace(run, returncode=None, error=cannot.what, fix=cannot.fix)
    denied = sandbox.denial(policy, run.stdout + "\n" + run.stderr, Path(cwd).resolve())
    return replace(run, denied=denied) if denied else run


def _resolve(program: str, env: Mapping[str, str], cwd: str | os.PathLike[str]) -> str | None:
    """The executable bubblewrap will run (resolved here, so a missing program is reported as
    missing, not as bubblewrap's failure)."""
    if os.sep in program:
        path = Path(cwd) / program
        return str(path) if path.exists() else None
    return proc.which(program, env)


@dataclass(frozen=True)
class _Beat:
    """How a check is watched while it runs (proc.run's options, passed through)."""

    heartbeat: Callable[[float], None] | None
    every: float
    supervised: bool
    on_start: Callable[[int], None] | None
    cancel: threading.Event | None


def _run(
    args: tuple[str, ...],
    argv: tuple[str, ...],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float,
    started: float,
    beat: _Beat,
) -> CheckRun:
    try:
        done = proc.run(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            heartbeat=beat.heartbeat,
            heartbeat_every=beat.every,
            supervised=beat.supervised,
            on_start=beat.on_start,
            cancel=beat.cancel,
        )
    except proc.CommandTimeout as exc:
        return CheckRun(args, None, time.monotonic() - started, stdout=exc.stdout, timed_out=True)
    except proc.CommandNotFound as exc:
        seconds = time.monotonic() - started
        return CheckRun(args, None, seconds, not_found=True, error=exc.what, fix=exc.fix)
    except proc.CommandCancelled:
        raise
    except PlanBuildError as exc:  # not executable, and the like
        return CheckRun(args, None, time.monotonic() - started, error=exc.what, fix=exc.fix)
    return CheckRun(args, done.returncode, done.seconds, done.stdout, done.stderr)
