"""One project check command run to an outcome: the shared core of dispatch's verification
and delivery's `verify` commands.

Both run a command the project configured (a test suite, a linter) with a timeout and a
heartbeat, and both must report a check that timed out, is missing or cannot start as a failed
check rather than an error that stops plan-build. `run_check` does that translation once; each
caller turns the `CheckRun` into its own row and words.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from plan_build.core import proc
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
) -> CheckRun:
    """Run one check command to a CheckRun; only a stop on purpose (proc.CommandCancelled) and
    interruptions propagate, since they end the whole step, not this check."""
    args = tuple(argv)
    started = time.monotonic()
    try:
        done = proc.run(
            args,
            cwd=cwd,
            env=env,
            timeout=timeout,
            heartbeat=heartbeat,
            heartbeat_every=heartbeat_every,
            supervised=supervised,
            on_start=on_start,
            cancel=cancel,
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
