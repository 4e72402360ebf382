"""Run a command on a pseudo-terminal, typing answers as a user would."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PtyResult:
    code: int
    output: str


def run_on_pty(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    typed: Sequence[tuple[str, str]] = (),
    timeout: float = 60.0,
) -> PtyResult:
    """Run `argv` with stdin/stdout/stderr on one pty; when the output so far contains the
    first element of a `typed` pair, type its second element (a line or answer)."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    out = b""
    pending = list(typed)
    cursor = 0
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                child.kill()
                raise TimeoutError(f"{argv} still running; output so far:\n{out.decode()}")
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    chunk = b""
                if not chunk and child.poll() is not None:
                    break
                out += chunk
            elif child.poll() is not None:
                # drain what is left
                try:
                    while select.select([master], [], [], 0.05)[0]:
                        chunk = os.read(master, 4096)
                        if not chunk:
                            break
                        out += chunk
                except OSError:
                    pass
                break
            text = out.decode("utf-8", "replace")
            while pending and pending[0][0] in text[cursor:]:
                trigger, answer = pending.pop(0)
                cursor = text.index(trigger, cursor) + len(trigger)
                os.write(master, answer.encode())
    finally:
        os.close(master)
    code = child.wait(timeout=10)
    return PtyResult(code, out.decode("utf-8", "replace").replace("\r\n", "\n"))
