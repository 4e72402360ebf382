"""The readiness report: every check, run concurrently, reported together.

Only the memory checks (the AgentMemory server and both agentmemory plugins) may degrade; on a
terminal the user chooses retry / continue degraded / stop, without one the run stops.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from plan_build import __version__
from plan_build.core import agentmemory as memory
from plan_build.core import proc, proctree, tools
from plan_build.core.checks import Check, Probe, run_concurrently, timed, to_json
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.core.interact import Choice, isatty
from plan_build.startup import enhancechecks, plugins, preflighttable, sources, wslchecks

Mode = Literal["standard", "architect"]
VERSION_TIMEOUT = 10.0
# the tools setup installs (or names an installer for) show setup's own command (sources)
INSTALL = {
    "git": "install git (e.g. sudo apt-get install git, or brew install git)",
    **{t: h for t in ("claude", "codex", "coderabbit") if (h := sources.install_hint(t))},
}


@dataclass(frozen=True)
class Options:
    mode: Mode = "standard"
    yolo: bool = False
    prompt: bool = False
    need_terminal: bool = True  # plan/architect launch; the report alone only warns
    unguarded: bool = False  # the person asked to launch without the sandbox (--unguarded)
    extra: Sequence[Callable[[Session], Probe]] = ()


@dataclass
class Report:
    mode: Mode
    checks: list[Check]
    repo: Repo | None
    memory_mode: Literal["required", "degraded"] = "required"
    header: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    branch: str | None = None  # asked once, beside the probes (header and ready line)

    @property
    def blocking(self) -> list[Check]:
        return [
            c
            for c in self.checks
            if c.failed and not (c.degradable and self.memory_mode == "degraded")
        ]

    @property
    def ok(self) -> bool:
        return not self.blocking

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "mode": self.mode,
            "memory_mode": self.memory_mode,
            "checks": to_json(self.checks),
        }


def check_terminal(session: Session, need: bool) -> Check:
    missing = [
        name for name, s in (("stdin", session.stdin), ("stdout", session.stdout)) if not isatty(s)
    ]
    if not missing:
        return Check("terminal", "pass", "interactive")
    detail = f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not a terminal"
    if not need:
        return Check("terminal", "warn", detail + " (a launch needs one)")
    return Check(
        "terminal",
        "fail",
        detail,
        "run plan-build from an interactive terminal (Claude Code is a terminal app)",
    )


def check_worktree(session: Session) -> tuple[Check, Repo | None]:
    try:
        repo = session.repo
    except PlanBuildError as exc:
        return Check("git.worktree", "fail", exc.what, exc.fix), None
    except proc.CommandNotFound:
        return Check("git.worktree", "fail", "git is not on PATH", INSTALL["git"]), None
    unmerged = repo.unmerged_paths()
    if unmerged:
        shown = ", ".join(unmerged[:3]) + (" …" if len(unmerged) > 3 else "")
        return Check(
            "git.worktree",
            "fail",
            f"unmerged paths: {shown}",
            "finish or abort the merge (git merge --abort / git rebase --abort)",
        ), repo
    return Check("git.worktree", "pass", f"work tree at {repo.root}"), repo


def tool_probe(session: Session, name: str) -> Probe:
    def probe() -> Check:
        cid = f"tool.{name}"
        a = tools.version(
            name, env=session.env, home=session.home, cwd=session.cwd, timeout=VERSION_TIMEOUT
        )
        failed = tools.unanswered(cid, a, timeout=VERSION_TIMEOUT, install=INSTALL.get(name))
        if failed is not None:
            return failed
        if not a.ok:
            said = f"{a.path} found, but `{name} --version` exited {a.returncode}"
            return Check(cid, "warn", said)
        return Check(cid, "pass", f"{name} {a.version or 'version unknown'} ({a.path})")

    return probe


def check_safe_mode(session: Session) -> Check:
    value = session.env.get("CLAUDE_CODE_SAFE_MODE")
    if value:
        return Check(
            "claude.safe_mode",
            "fail",
            f"CLAUDE_CODE_SAFE_MODE={value} turns off Claude Code's plugins and skills",
            "unset CLAUDE_CODE_SAFE_MODE",
        )
    return Check("claude.safe_mode", "pass", "off")


def check_skill(session: Session, mode: Mode) -> Check:
    path = session.resources.skill(mode)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Check(
            "skill.readable",
            "fail",
            f"{path} cannot be read ({exc.__class__.__name__})",
            "reinstall plan-build or activate a release (plan-build release.activate)",
        )
    if not text.strip():
        return Check(
            "skill.readable",
            "fail",
            f"{path} is empty",
            "reinstall plan-build or activate a release (plan-build release.activate)",
        )
    return Check("skill.readable", "pass", str(path))


def check_yolo_root(session: Session) -> Check:
    if os.geteuid() != 0:
        return Check("yolo.root", "pass", "not running as root")
    if session.env.get("IS_SANDBOX") == "1":
        return Check("yolo.root", "pass", "root inside a sandbox (IS_SANDBOX=1)")
    return Check(
        "yolo.root",
        "fail",
        "Claude Code refuses --dangerously-skip-permissions for root",
        "run as a normal user, or set IS_SANDBOX=1 if this really is a sandbox",
    )


def check_sandbox(session: Session, opts: Options) -> Check:
    """The layer that keeps agents and checks away from git state (ADR 0190): bubblewrap that
    can make a namespace here, and socat for Claude's network proxy."""
    from plan_build.core import sandbox

    if opts.unguarded:
        return Check(
            "sandbox.layer",
            "warn",
            "unguarded at your request: Claude's commands and the project's checks will run "
            "without the sandbox (the launch asks you to confirm it in words)",
        )
    layer = sandbox.probe(session.env)
    if layer.ok:
        return Check("sandbox.layer", "pass", f"bubblewrap and socat ({layer.bwrap})")
    cause = "missing" if layer.problem and layer.problem.endswith("not installed") else "broken"
    return Check(
        "sandbox.layer", "fail", layer.problem or "unavailable", sandbox.INSTALL_FIX, cause=cause
    )


def check_process_tree() -> Check | None:
    """A warning row where the supervisor cannot hold a command's whole tree as it does on
    Linux (macOS; /proc hidden; the subreaper refused); no row where it can."""
    gap = proctree.supervision_gap()
    if gap is None:
        return None
    return Check(
        "process.tree",
        "warn",
        f"{gap}: a process an agent starts that leaves its session and clears its environment "
        "within 0.2 s can outlive a killed plan-build (docs/portability.md)",
    )


def memory_probes(session: Session, opts: Options) -> list[Probe]:
    claude_plugins = ["agentmemory@agentmemory"]
    probes: list[Probe] = [
        lambda: plugins.codex_check("agentmemory@agentmemory", session.env, session.cwd),
        lambda: memory.check_server(session.env, session.home),
    ]
    if opts.mode == "standard":
        claude_plugins.insert(0, "mattpocock-skills@mattpocock")
    probes.insert(0, lambda: plugins.claude_checks(claude_plugins, session.env, session.cwd))
    return probes


def run(session: Session, opts: Options) -> Report:
    terminal = check_terminal(session, opts.need_terminal)
    found: list[tuple[Repo | None, str | None]] = []

    def worktree() -> Check:
        check, repo = check_worktree(session)
        found.append((repo, repo.branch() if repo else None))
        return check

    # the git checks (and the header's branch) run beside the probes, not before or after them
    probes: list[Probe] = [worktree]
    probes += [tool_probe(session, t) for t in ("git", "claude", "codex", "coderabbit")]
    probes.append(lambda: wslchecks.checks(session.env, session.cwd))  # WSL only: wsl.*
    if opts.prompt:  # `auggie` on PATH and its login: tool.auggie, auggie.login
        probes.append(enhancechecks.preflight_probe(session))
    probes += [lambda: check_safe_mode(session), lambda: check_skill(session, opts.mode)]
    probes.append(lambda: check_sandbox(session, opts))
    memory_checks = memory_probes(session, opts)
    probes += memory_checks
    probes += [make(session) for make in opts.extra]
    if opts.yolo:
        probes.append(lambda: check_yolo_root(session))
    # the plugin lists are the slowest launches (claude's is most of preflight's time)
    checks = [terminal, *started_first(probes, memory_checks[:2])]
    if (gap := check_process_tree()) is not None:
        checks.append(gap)
    repo, branch = found[0]
    head = header(session, opts.mode, repo, branch)
    return Report(opts.mode, checks, repo, header=head, branch=branch)


def started_first(probes: Sequence[Probe], first: Sequence[Probe]) -> list[Check]:
    """run_concurrently, with `first` handed to the pool before the rest (under load a probe
    given late starts tens of milliseconds late); the checks still come in `probes` order."""
    done: dict[int, list[Check]] = {}

    def keeping(i: int) -> Probe:
        def probe() -> list[Check]:
            done[i] = timed(probes[i])
            return done[i]

        return probe

    order = sorted(range(len(probes)), key=lambda i: not any(probes[i] is p for p in first))
    run_concurrently([keeping(i) for i in order])
    return [check for i in range(len(probes)) for check in done[i]]


def rerun_memory(session: Session, opts: Options, report: Report) -> None:
    fresh = {c.id: c for c in run_concurrently(memory_probes(session, opts))}
    report.checks = [fresh.get(c.id, c) for c in report.checks]


def header(session: Session, mode: Mode, repo: Repo | None, branch: str | None) -> str:
    where = str(repo.root if repo else session.cwd)
    return f"plan-build {__version__} · {mode} mode · {where}" + (f" ({branch})" if branch else "")


def settle(report: Report, session: Session, opts: Options) -> Report:
    """Print the report; resolve memory failures by asking; raise when the launch is blocked."""
    con = session.console
    if report.ok and isatty(con.stream) and all(c.status == "pass" for c in report.checks):
        con.say(preflighttable.render_ready(report, session))
    else:
        con.say(preflighttable.render(report, session))
    while True:
        hard = [c for c in report.checks if c.failed and not c.degradable]
        soft = [c for c in report.checks if c.failed and c.degradable]
        if hard:
            raise blocked(hard, closing_fix(report, session, MANUAL_FIX), degradable=soft)
        if not soft:
            return report
        if not session.ui.interactive:
            raise PlanBuildError(
                "memory continuity is unavailable and there is no terminal to approve "
                "degraded mode",
                closing_fix(
                    report,
                    session,
                    "fix the AgentMemory checks above, or rerun from a terminal to continue "
                    "degraded",
                ),
                code=ExitCode.PREFLIGHT,
            )
        con.say("")
        answer = session.ui.choose(
            "Memory continuity is unavailable.",
            [
                Choice("r", "retry"),
                Choice("d", "continue degraded (no recall this session)"),
                Choice("s", "stop"),
            ],
            default="s",
        )
        if answer == "s":
            raise PlanBuildError(
                "stopped: memory continuity is unavailable",
                "fix the AgentMemory checks above and rerun",
                code=ExitCode.PREFLIGHT,
            )
        if answer == "d":
            report.memory_mode = "degraded"
            con.say("continuing in degraded mode: no memory recall this session")
            return report
        rerun_memory(session, opts, report)
        con.say(preflighttable.render(report, session))


MANUAL_FIX = "apply the fixes shown above (→) and rerun"


def closing_fix(report: Report, session: Session, manual: str) -> str:
    """`manual`, led by `plan-build setup` when setup can carry out some of the fixes."""
    from plan_build.startup import fixable

    failing = [c for c in report.checks if c.failed]
    return fixable.closing_fix(session, report.mode, failing, manual)


def blocked(
    failures: Sequence[Check], fix: str = MANUAL_FIX, *, degradable: Sequence[Check] = ()
) -> PlanBuildError:
    """The launch is blocked by `failures`; `degradable` failed too (the table shows them all,
    so the count is of them all: issue 36) but alone would allow degraded mode."""
    every = [*failures, *degradable]
    names = ", ".join(c.id for c in every)
    noun = "check" if len(every) == 1 else "checks"
    what = f"preflight failed: {len(every)} {noun} ({names})"
    if degradable:
        what += f"; {len(failures)} of them cannot be run around in degraded mode"
    return PlanBuildError(what, fix, code=ExitCode.PREFLIGHT)


__all__ = ["Mode", "Options", "Report", "closing_fix", "run", "settle"]
