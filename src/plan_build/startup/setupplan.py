"""The `setup` plan: each failing readiness check becomes a step, in dependency order.

The tools come first (npm installs of claude and codex), then the plugins that need them,
AgentMemory, the skills and launcher, and the identity file; a failure without a mechanical
remedy becomes an item for the user. The runnable steps lead, the user's items follow.
"""

from __future__ import annotations

from functools import partial

from plan_build.core import proc
from plan_build.core.checks import Check
from plan_build.core.context import Session
from plan_build.core.errors import PlanBuildError
from plan_build.startup import preflight, sources
from plan_build.startup.setupmemory import memory_steps
from plan_build.startup.setupplugins import claude_steps, codex_steps
from plan_build.startup.setuprelease import skill_steps
from plan_build.startup.setupstep import (
    NPM_TIMEOUT,
    QUERY_TIMEOUT,
    Options,
    Planner,
    Result,
    Step,
)


def plan(session: Session, report: preflight.Report, opts: Options) -> list[Step]:
    config = None
    if report.repo is not None:
        from plan_build.core.config import load

        config = load(report.repo.root)
    p = Planner(session, report, opts, config)
    sandbox_steps(p)
    tools = tool_steps(p)
    claude_steps(p, tools.get("claude"))
    codex_steps(p, tools.get("codex"))
    memory_steps(p)
    skill_steps(p)
    identity_steps(p)
    for check in report.checks:  # whatever is left is the user's to do
        if check.failed and check.id not in p.covered:
            p.manual(check.id, check.detail, check.remediation or "see the report")
    runnable = [s for s in p.steps if s.runs]
    return runnable + [s for s in p.steps if not s.runs]


def tool_steps(p: Planner) -> dict[str, str]:
    planned: dict[str, str] = {}
    npm = proc.which("npm", p.env)
    prefix: list[str] = []
    for name in ("claude", "codex"):
        check = p.failed(f"tool.{name}")
        if check is None:
            continue
        spec = sources.npm_spec(name, latest=p.opts.latest)
        shown = sources.npm_install(name, latest=p.opts.latest)
        if proc.which(name, p.env) is not None:  # there, but broken: not mechanical
            p.manual(check.id, check.detail, check.remediation or proc.quote(shown))
            continue
        if npm is None:
            p.manual(
                check.id,
                f"install {name}: npm is not on PATH",
                f"install Node.js with npm (https://nodejs.org, or your package manager), "
                f"then: {proc.quote(shown)}",
            )
            continue
        if not prefix:
            prefix.append(npm_prefix(p, npm))
        argv = [npm, *shown[1:]]
        planned[name] = p.add(
            Step(
                id=f"tool.{name}",
                check=check.id,
                title=f"install {name} ({spec}) with npm",
                command=proc.quote(shown),
                changes=(f"npm's global packages under {p.short(prefix[0])}",),
                remedy=(
                    "read npm's error above; if the global directory needs root, point npm at a "
                    "directory of yours (npm config set prefix ~/.local) and rerun - plan-build "
                    "never uses sudo"
                ),
                action=partial(p.run_argv, argv, NPM_TIMEOUT),
                verify=partial(tool_problem, p, name, prefix[0]),
                # npm succeeded: the problem (not on PATH, or the tool's own) says the fix
                remedy_if_done="",
            )
        )
    check = p.failed("tool.coderabbit")
    if check is not None and proc.which("coderabbit", p.env) is None:
        p.manual(
            check.id,
            "install CodeRabbit yourself (plan-build never pipes a download into a shell)",
            sources.CODERABBIT_HINT,
        )
    return planned


def sandbox_steps(p: Planner) -> None:
    """bubblewrap and socat (the sandbox, ADR 0190): installed with the system's package
    manager when setup runs as root; otherwise the user's item, with the command to run
    (plan-build never uses sudo). A sandbox that is installed but cannot start here (a
    container that forbids namespaces) is the user's to fix."""
    import os

    check = p.failed("sandbox.layer")
    if check is None:
        return
    manager = next((m for m in sources.SANDBOX_PACKAGES if proc.which(m, p.env)), None)
    if check.cause != "missing" or manager is None:
        p.manual(check.id, check.detail, check.remediation or "")
        return
    argv = sources.SANDBOX_PACKAGES[manager]
    if os.geteuid() != 0:
        p.manual(check.id, "install bubblewrap and socat", "sudo " + proc.quote(argv))
        return
    p.add(
        Step(
            id="sandbox.packages",
            check=check.id,
            title=f"install bubblewrap and socat with {manager}",
            command=proc.quote(argv),
            changes=("the system's packages: bubblewrap, socat",),
            remedy=f"read {manager}'s error above (apt-get may need `apt-get update` first)",
            action=partial(p.run_argv, argv, NPM_TIMEOUT),
            verify=partial(_sandbox_problem, p),
        )
    )


def _sandbox_problem(p: Planner) -> str | None:
    from plan_build.core import sandbox

    return sandbox.probe(p.env).problem


def npm_prefix(p: Planner, npm: str) -> str:
    try:
        r = proc.run([npm, "prefix", "-g"], cwd=p.cwd, env=p.env, timeout=QUERY_TIMEOUT)
    except PlanBuildError:
        return "npm's global prefix"
    return r.stdout.strip() if r.ok and r.stdout.strip() else "npm's global prefix"


def tool_problem(p: Planner, name: str, prefix: str) -> str | None:
    path = proc.which(name, p.env)
    if path is None:
        return (
            f"npm installed it, but `{name}` is not on PATH: add {prefix}/bin to PATH "
            "(plan-build never edits shell startup files)"
        )
    checks = preflight.tool_probe(p.session, name)()
    check = checks if isinstance(checks, Check) else checks[0]
    if check.status == "pass":
        return None
    return check.detail + (f" ({check.remediation})" if check.remediation else "")


def identity_steps(p: Planner) -> None:
    from plan_build.startup import identity

    repo = p.report.repo
    if repo is None:
        return
    try:
        ident = identity.read(repo)
    except PlanBuildError as exc:
        p.manual("identity", exc.what, exc.fix or "")
        return
    if ident is not None and not ident.committed:
        p.manual("identity", f"commit {identity.FILENAME}", identity.commit_command())
        return
    if ident is not None:
        return
    proposal = identity.propose(repo)

    def write() -> Result:
        identity.write(repo, proposal)
        return Result(True, f'wrote "{proposal}"; commit it: {identity.commit_command()}')

    p.add(
        Step(
            id="identity",
            check="identity",
            title=f'write {identity.FILENAME} with the proposed id "{proposal}" (you commit it)',
            command=f"plan-build identity --set {proposal}",
            changes=(str(repo.root / identity.FILENAME),),
            remedy="choose an id: plan-build identity --set <id>",
            action=write,
            verify=lambda: None if (repo.root / identity.FILENAME).is_file() else "not written",
        )
    )
