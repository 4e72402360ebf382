"""The `plan-build` program: the task collection behind invoke.Program, with plan-build's
error handling (one message, named exit codes, internal errors logged, Ctrl-C is 130)."""

from __future__ import annotations

import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from invoke.exceptions import Exit, ParseError, UnexpectedExit
from invoke.program import Program

from plan_build import __version__, clock
from plan_build.errors import ExitCode, PlanBuildError

PREFIX = "plan-build"


class PlanBuildProgram(Program):
    """One task per run; every command-line mistake is a usage error (exit 2)."""

    def parse_tasks(self) -> None:
        super().parse_tasks()
        names = [ctx.name for ctx in self.tasks]
        if len(names) > 1:
            raise ParseError(f"run one command at a time (got: {', '.join(map(str, names))})")

    def run(self, argv: Any = None, exit: bool = True) -> None:
        code = run_guarded(self, argv)
        if exit and code is not None:
            sys.exit(code)
        if code not in (None, 0):
            raise SystemExit(code)


def run_guarded(program: Program, argv: Any) -> int | None:
    """Run the program and turn every outcome into a message and an exit code."""
    err = sys.stderr
    try:
        program.create_config()
        program.parse_core(argv)
        program.parse_collection()
        program.parse_tasks()
        program.parse_cleanup()
        program.update_config()
        program.execute()
    except ParseError as exc:
        msg = str(exc)
        unknown = re.fullmatch(r"No idea what '(.+)' is!", msg)
        if unknown:
            word = unknown.group(1)
            kind = "option" if word.startswith("-") else "command or argument"
            msg = f"unknown {kind} {word}"
        err.write(f"{PREFIX}: {msg}\n  fix: see '{PREFIX} --help' or '{PREFIX} <command> --help'\n")
        return int(ExitCode.USAGE)
    except PlanBuildError as exc:
        err.write(f"{PREFIX}: {exc}\n")
        return int(exc.code)
    except Exit as exc:
        if exc.message:
            err.write(f"{exc.message}\n")
        return exc.code
    except UnexpectedExit as exc:  # pragma: no cover - tasks do not use c.run
        return exc.result.exited
    except KeyboardInterrupt:
        err.write(f"\n{PREFIX}: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug: one line plus where the details are
        where = write_crash_log(exc)
        err.write(f"{PREFIX}: internal error: {type(exc).__name__}: {exc}\n  details: {where}\n")
        return int(ExitCode.INTERNAL)
    return None


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


def build_program(binary: str = PREFIX) -> PlanBuildProgram:
    from plan_build.tasks import namespace

    return PlanBuildProgram(
        namespace=namespace,
        name="plan-build",
        binary=binary,
        binary_names=[binary],
        version=__version__,
    )


def main() -> None:
    build_program().run()


def run_release(pyz: str, bind_lock: int | None = None) -> None:
    """Entry point of a bundle's zipapp (and of the installed launcher): bind, then run."""
    from plan_build.runrelease import bind

    bind(pyz, bind_lock)
    main()
