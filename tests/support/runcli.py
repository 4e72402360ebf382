"""Run the real entry point (`python -m plan_build`) as a user would, without a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    argv: list[str] = field(default_factory=list)


def run_cli(
    *args: str,
    cwd: Path,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> Result:
    """Run the installed entry point (`python -m plan_build`) as a user would."""
    argv = [sys.executable, "-m", "plan_build", *args]
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        argv,
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
        stdin=None if input is not None else subprocess.DEVNULL,
        start_new_session=True,  # no controlling terminal: /dev/tty is never the developer's
    )
    return Result(proc.returncode, proc.stdout, proc.stderr, argv)


__all__ = ["Result", "run_cli"]
