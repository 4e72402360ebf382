"""`plan-build setup`: from a fresh machine to a green readiness report. Thin wrapper."""

from __future__ import annotations

from typing import Any

from plan_build.cli.strict import command
from plan_build.core.context import Session
from plan_build.core.errors import usage


@command(
    help={
        "dry_run": "print the plan and change nothing",
        "yes": "run every step of the plan without asking",
        "mode": "standard (default) or architect: which plugins the plan needs",
        "json": "print the plan and each step's outcome as JSON on stdout",
        "latest": "install the latest claude/codex, not the versions plan-build is tested with",
    }
)
def setup(  # noqa: PLR0917 - invoke maps each flag to a parameter
    c: Any,
    dry_run: bool = False,
    yes: bool = False,
    mode: str = "standard",
    json: bool = False,
    latest: bool = False,
) -> None:
    """Plan the fixes for every failing readiness check, run them with your consent, recheck."""
    from plan_build.startup import setup as steps

    if mode not in ("standard", "architect"):
        raise usage(
            f"--mode must be standard or architect, not {mode!r}",
            "plan-build setup --mode architect",
        )
    opts = steps.Options(mode=mode, dry_run=dry_run, yes=yes, json=json, latest=latest)  # type: ignore[arg-type]
    steps.run(Session.from_process(), opts)


TASKS = [setup]
