"""Session tasks: plan, architect, preflight, identity, env. Thin wrappers over steps."""

from __future__ import annotations

from typing import Any

from plan_build.cli.strict import command
from plan_build.core import jsonout
from plan_build.core.context import Session
from plan_build.core.errors import usage


@command(
    help={
        "yolo": "run Claude with --dangerously-skip-permissions (workflow gates still apply)",
        "prompt": "enhance the request with Auggie first (approval required)",
        "dry_run": "print the argv, added environment and prompt instead of launching",
        "unguarded": "launch without the sandbox (you type the words to confirm; recorded)",
    }
)
def plan(
    c: Any, yolo: bool = False, prompt: bool = False, dry_run: bool = False, unguarded: bool = False
) -> None:
    """Standard workflow: preflight, identity, your request (end with EOF), then Claude Code."""
    from plan_build.startup.chain import Request, start

    req = Request("standard", yolo=yolo, prompt=prompt, dry_run=dry_run, unguarded=unguarded)
    start(Session.from_process(), req)


@command(
    help={
        "new": "archive SPEC.md, TASKS.md, ADR.md and CHANGELOG.md first and start new records",
        "yolo": "run Claude with --dangerously-skip-permissions (workflow gates still apply)",
        "dry_run": "print the argv, added environment and prompt instead of launching",
        "unguarded": "launch without the sandbox (you type the words to confirm; recorded)",
    }
)
def architect(
    c: Any, new: bool = False, yolo: bool = False, dry_run: bool = False, unguarded: bool = False
) -> None:
    """Architect workflow: Claude writes documents, Codex writes code through dispatch."""
    from plan_build.startup.chain import Request, start

    req = Request("architect", yolo=yolo, new=new, dry_run=dry_run, unguarded=unguarded)
    start(Session.from_process(), req)


@command(
    help={
        "mode": "standard (default) or architect",
        "json": "print the report as JSON on stdout",
    }
)
def preflight(c: Any, mode: str = "standard", json: bool = False) -> None:
    """The readiness report alone (exit 3 when a launch would be blocked)."""
    from plan_build.core.errors import ExitCode, PlanBuildError
    from plan_build.startup import preflight as pf
    from plan_build.startup import preflighttable

    if mode not in ("standard", "architect"):
        raise usage(
            f"--mode must be standard or architect, not {mode!r}",
            "plan-build preflight --mode architect",
        )
    session = Session.from_process()
    report = pf.run(session, pf.Options(mode=mode, need_terminal=False))  # type: ignore[arg-type]
    if json:
        jsonout.write(session.stdout, report.as_json())
    else:
        session.console.say(preflighttable.render(report, session))
    if not report.ok:
        failing = [c.id for c in report.checks if c.failed]
        raise PlanBuildError(
            f"not ready: {', '.join(failing)}",
            None if json else pf.closing_fix(report, session, "apply the fixes shown above (→)"),
            code=ExitCode.PREFLIGHT,
        )


@command(help={"set": "write this id to .agentmemory-project (then commit it)"})
def identity(c: Any, set: str = "") -> None:
    """Show, validate or create the repository's AgentMemory identity."""
    from plan_build.startup import identity as ident

    session = Session.from_process()
    repo = session.repo
    if set:
        ident.set_value(session, repo, set)
    else:
        ident.show(session, repo)


@command(help={"json": "print the report as JSON on stdout"})
def env(c: Any, json: bool = False) -> None:
    """The effective configuration: versions, paths, identity, tools (only checked facts)."""
    from plan_build.startup import envreport

    envreport.show(Session.from_process(), as_json=json)


TASKS = [plan, architect, preflight, identity, env]
