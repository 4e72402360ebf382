"""Run plan-build and SIGKILL it at one chosen point: `python killpoint.py SPEC ARGS...`.

SPEC is `KIND:NEEDLE:N` - die at the N-th matching event:
- `run:WORD`    before starting an external command whose argv holds WORD,
- `ran:WORD`    right after such a command finished,
- `replace:NAME` before renaming a temp file onto a path ending in NAME (atomic_write),
- `unlink:NAME`  before deleting a path ending in NAME.
SIGKILL cannot be caught: no `finally`, no atexit, exactly what a crash or `kill -9` leaves.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(spec: str) -> None:
    kind, needle, nth = spec.split(":")
    count = [0]

    def hit() -> bool:
        count[0] += 1
        return count[0] == int(nth)

    if kind in ("run", "ran"):
        from plan_build.core import proc

        original = proc._execute

        def execute(argv: Any, **kw: Any) -> Any:
            match = needle in [os.fspath(a) for a in argv]
            if match and kind == "run" and hit():
                die()
            out = original(argv, **kw)
            if match and kind == "ran" and hit():
                die()
            return out

        proc._execute = execute  # type: ignore[assignment]
    elif kind in ("replace", "unlink"):
        original_os = getattr(os, kind)

        def wrapped(*args: Any, **kw: Any) -> Any:
            target = os.fspath(args[1] if kind == "replace" else args[0])
            if target.endswith(needle) and hit():
                die()
            return original_os(*args, **kw)

        setattr(os, kind, wrapped)
    else:
        raise SystemExit(f"unknown kill point kind {kind!r}")


if __name__ == "__main__":
    install(sys.argv[1])
    sys.argv = ["plan-build", *sys.argv[2:]]
    from plan_build.main import main

    main()
