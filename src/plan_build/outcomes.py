"""How a run ends: the user's message and the exit code for each outcome, and the crash log.

Both ways into plan-build end here: the Invoke program (plan_build.program) and the direct
path that answers `status` without loading Invoke (plan_build.main). One mapping, so the same
failure reads and exits the same whichever way the command came in.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from plan_build import __version__
from plan_build.core import clock
from plan_build.core.errors import ExitCode, PlanBuildError

PREFIX = "plan-build"


def crash_log_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "plan-build" / "plan-build.log"


def write_crash_log(exc: BaseException) -> str:
    path = crash_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stamp = clock.stamp()
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"## {stamp} plan-build {__version__} python {sys.version.split()[0]}\n")
            fh.write(f"argv: {sys.argv!r}\n")
            fh.write("".join(traceback.format_exception(exc)))
            fh.write("\n")
    except OSError:
        return "(the log could not be written; rerun with -d for a traceback)"
    return str(path)


def guarded(
    run: Callable[[], int | None], *, err: TextIO, wants_traceback: Callable[[], bool]
) -> int | None:
    """Run `run` and turn what it raises into one message on `err` and an exit code (else
    what `run` returns; None: it finished). A bug is one line plus where its details are
    (with -d: the traceback too)."""
    try:
        return run()
    except PlanBuildError as exc:
        from plan_build.core.ui import printable_lines

        err.write(f"{PREFIX}: {printable_lines(str(exc))}\n")  # a message may quote a task
        return int(exc.code)
    except KeyboardInterrupt:
        err.write(f"\n{PREFIX}: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        where = write_crash_log(exc)
        from plan_build.core.ui import printable_lines

        what = printable_lines(f"{type(exc).__name__}: {exc}")
        err.write(f"{PREFIX}: internal error: {what}\n  details: {where}\n")
        if wants_traceback():
            err.write("".join(traceback.format_exception(exc)))
        return int(ExitCode.INTERNAL)


__all__ = ["PREFIX", "crash_log_path", "guarded", "write_crash_log"]
