"""The `plan-build` entry point (and `python -m plan_build`, and a release's launcher).

Every command runs through the Invoke program (plan_build.program), except the one people
and agents run most: `status` and `status --json`, word for word, are answered directly,
without loading Invoke, whose import is most of what `status` used to cost (docs/adr/0161).
Any other spelling (`-d status`, `status --help`, `inv status`) takes the program's path, and
both end in the same outcome handling (plan_build.outcomes).

Inside a session (PLAN_BUILD_BROKER set by the launch), before anything else, the command line
goes to the session's broker, which runs it outside Claude Code's sandbox if an agent may run
it (core/brokerclient.py, docs/adr/0191); this process relays its output and exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from plan_build.outcomes import guarded

# sessionvars.BROKER and .BROKERED, spelt here so `status` imports nothing more
BROKER = "PLAN_BUILD_BROKER"
BROKERED = "PLAN_BUILD_BROKERED"

# the command lines answered without Invoke: exactly what `status` accepts, no more
DIRECT: dict[tuple[str, ...], bool] = {("status",): False, ("status", "--json"): True}


def direct_json(args: Sequence[str]) -> bool | None:
    """Whether the arguments ask for `status` as JSON (None: not a direct command line)."""
    return DIRECT.get(tuple(args))


def _status(json: bool) -> None:
    from plan_build.core.context import Session
    from plan_build.views import status as view

    view.show(Session.from_process(), json=json)


def main() -> None:
    import os

    spool = os.environ.get(BROKER)
    if spool:
        from pathlib import Path

        from plan_build.core import brokerclient

        sys.exit(brokerclient.forward(sys.argv[1:], Path(spool)))
    brokered = os.environ.get(BROKERED)
    if brokered and brokered != "1":  # a broker's run: where it runs now, checked for good
        from plan_build.startup.brokerrules import confine_run

        refusal = confine_run(brokered, os.getcwd())
        if refusal is not None:
            sys.stderr.write(f"plan-build: {refusal}\n")
            sys.exit(int(refusal.code))
    json = direct_json(sys.argv[1:])
    if json is None:
        from plan_build.program import build_program

        build_program().run()
        return
    code = guarded(lambda: _status(json), err=sys.stderr, wants_traceback=lambda: False)
    if code is not None:
        sys.exit(code)


def run_release(pyz: str, bind_lock: int | None = None) -> None:
    """Entry point of a bundle's zipapp (and of the installed launcher): bind, then run."""
    from plan_build.core.runrelease import bind

    bind(pyz, bind_lock)
    main()


__all__ = ["direct_json", "main", "run_release"]
