"""Which failing readiness checks `plan-build setup` can carry out, and the closing fix line.

A newcomer's first report ends with one line of advice; when setup could apply some of the
fixes with consent, that line names it first and the manual fixes after. This is decided from
what is on PATH and what each check says (its `cause`), without running anything: the plan
itself asks the CLIs (`setupplan`), the report's last line must not cost another launch.
A default-suite test keeps this in step with the plan on a fresh machine.
"""

from __future__ import annotations

from collections.abc import Sequence

from plan_build.core import proc
from plan_build.core.checks import Check
from plan_build.core.context import Session

PLUGIN_CAUSES = ("missing", "disabled")


def by_setup(session: Session, checks: Sequence[Check]) -> list[Check]:
    """The failing checks among `checks` that a `setup` step answers."""
    return [c for c in checks if c.failed and _can(session, c)]


def _can(session: Session, check: Check) -> bool:
    env = session.env
    if check.id in ("tool.claude", "tool.codex"):
        name = check.id.removeprefix("tool.")
        return proc.which(name, env) is None and proc.which("npm", env) is not None
    for tool in ("claude", "codex"):
        if check.id.startswith(f"{tool}.plugin."):
            config_ok = tool == "claude" or _codex_config_ok(session)
            if proc.which(tool, env) is not None:
                return check.cause in PLUGIN_CAUSES and config_ok
            return proc.which("npm", env) is not None and config_ok
    if check.id == "sandbox.layer":  # as root, with a package manager setup knows
        import os

        from plan_build.startup.setupplan import SANDBOX_PACKAGES

        return (
            check.cause == "missing"
            and os.geteuid() == 0
            and any(proc.which(m, env) for m in SANDBOX_PACKAGES)
        )
    if check.id == "memory.server":
        from plan_build.core import agentmemory

        return (
            check.cause == "unreachable"
            and agentmemory._is_loopback(agentmemory.base_url(env))
            and proc.which("npx", env) is not None
        )
    return False


def _codex_config_ok(session: Session) -> bool:
    from plan_build.core.errors import PlanBuildError
    from plan_build.startup import codexconfig

    try:
        codexconfig.parse(codexconfig.path(session.env, session.home))
    except PlanBuildError:
        return False
    return True


def setup_command(mode: str) -> str:
    return "plan-build setup" + (" --mode architect" if mode == "architect" else "")


def closing_fix(session: Session, mode: str, failing: Sequence[Check], manual: str) -> str:
    """`manual` alone, or setup first (naming what it fixes) and then the manual fixes."""
    fixable = by_setup(session, failing)
    if not fixable:
        return manual
    names = ", ".join(c.id for c in fixable)
    rest = [c.id for c in failing if c not in fixable]
    if not rest:
        return f"run {setup_command(mode)}: it fixes {names} with your consent"
    return (
        f"run {setup_command(mode)} first (it fixes {names} with your consent); "
        f"for {', '.join(rest)}: {manual}"
    )
