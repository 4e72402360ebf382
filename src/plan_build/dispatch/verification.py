"""A task's verification commands after a Codex run: each through `checkrun`, one console line
as it finishes; a command that hangs ends the verification (later ones would wait as long)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from plan_build.core import sandbox
from plan_build.core.checkrun import CheckRun, run_check
from plan_build.core.ui import Console
from plan_build.dispatch.attempt import HEARTBEAT_EVERY
from plan_build.dispatch.evidence import human_seconds
from plan_build.dispatch.results import VerifyRun
from plan_build.dispatch.taskmodel import Command, Task


def _combine(stdout: str, stderr: str) -> str:
    if stdout.strip() and stderr.strip():
        return stdout.rstrip("\n") + "\n" + stderr
    return stdout or stderr


def _verify_run(cmd: Command, r: CheckRun, limit: int) -> VerifyRun:
    if r.timed_out:
        output = r.stdout
    elif r.not_found:
        output = f"{cmd.argv[0]}: command not found"
    elif r.error is not None:  # not executable, the sandbox unavailable
        output = r.error + (f"\nfix: {r.fix}" if r.fix else "")
    else:
        output = _combine(r.stdout, r.stderr)
        if r.denied:  # the sandbox's refusal first: it is the reason, whatever followed
            output = f"plan-build: {r.denied}\n{output}"
    return VerifyRun(cmd.text, cmd.argv[0], r.returncode, r.seconds, r.timed_out, output, limit)


def verify(
    task: Task,
    *,
    root: Path,
    env: Mapping[str, str],
    limit: int,
    console: Console,
    heartbeat: Callable[[str], Callable[[float], None]],
    on_start: Callable[[int], None],
    on_command: Callable[[str], None],
    cancel: threading.Event | None = None,
) -> list[VerifyRun]:
    """Run the task's commands in order; `on_command(text)` is told which one starts (what an
    interruption reports), `heartbeat(what)` makes the beat for a long one."""
    runs: list[VerifyRun] = []
    # the task's commands are the plan's (an agent's) to write: they run under the sandbox
    policy = sandbox.for_checks(root, env) if task.commands else None
    for cmd in task.commands:
        on_command(cmd.text)
        checked = run_check(
            cmd.argv,
            cwd=root,
            env=env,
            timeout=limit,
            heartbeat=heartbeat(f"still running {cmd.text}"),
            heartbeat_every=HEARTBEAT_EVERY,
            supervised=True,
            on_start=on_start,
            cancel=cancel,
            policy=policy,
        )
        run = _verify_run(cmd, checked, limit)
        runs.append(run)
        mark = console.mark("pass" if run.passed else "fail")
        tail = (
            ""
            if run.passed
            else (
                f"  stopped after {limit}s"
                if run.timed_out
                else f"  exit {run.returncode}"
                if run.returncode is not None
                else "  not started"
            )
        )
        console.say(f"  {mark} {cmd.text}{tail} ({human_seconds(run.seconds)})")
        if run.timed_out:
            break  # a hung check says enough; later ones would wait as long
    return runs
