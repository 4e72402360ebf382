"""`plan-build setup`: turn the readiness report's failures into a plan, ask, run it, recheck.

Every failing check whose remedy is mechanical becomes a step that names what it changes and
the exact command; every other failure is listed for the user to do. Steps run in plan order
(which is dependency order), each after a yes (or `--yes`), each checked after it runs. A
failed or declined step skips the steps that need it; earlier steps stay. plan-build never
uses sudo, never edits shell startup files and never pipes a download into a shell.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from plan_build import agentmemory as memory
from plan_build import jsonout, proc
from plan_build.checks import Check
from plan_build.context import Session
from plan_build.errors import ExitCode, PlanBuildError
from plan_build.interact import Choice
from plan_build.startup import codexconfig, plugins, preflight, sources

Status = Literal["ok", "failed", "skipped", "declined", "not_run"]
NPM_TIMEOUT = 900.0
PLUGIN_TIMEOUT = 180.0  # a marketplace add clones a Git repository
QUERY_TIMEOUT = 30.0
MEMORY_WAIT = 90.0  # seconds for a started AgentMemory to answer livez (setup.memory_wait)
TAIL = 5
CHOICES = [Choice("y", "yes"), Choice("n", "no"), Choice("a", "all"), Choice("q", "quit")]
CODEX_PLUGIN = "agentmemory@agentmemory"


@dataclass(frozen=True)
class Options:
    mode: preflight.Mode = "standard"
    dry_run: bool = False
    yes: bool = False
    json: bool = False
    latest: bool = False


@dataclass(frozen=True)
class Result:
    ok: bool
    detail: str
    tail: tuple[str, ...] = ()


@dataclass
class Step:
    """One change setup can make (`action` set) or one thing only the user can do."""

    id: str
    check: str  # the preflight check it addresses
    title: str
    command: str  # exactly what runs (or what to run, for the user's own items)
    changes: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    remedy: str = ""  # printed when the step fails
    action: Callable[[], Result] | None = None
    verify: Callable[[], str | None] | None = None  # the problem after a run, or None

    @property
    def runs(self) -> bool:
        return self.action is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "check": self.check,
            "title": self.title,
            "command": self.command,
            "changes": list(self.changes),
            "needs": list(self.needs),
            "runs": self.runs,
        }


@dataclass
class Outcome:
    id: str
    status: Status
    detail: str
    tail: tuple[str, ...] = ()
    remedy: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "detail": self.detail,
            "tail": list(self.tail),
            "remedy": self.remedy,
        }


def tail(*texts: str, lines: int = TAIL) -> tuple[str, ...]:
    """The last lines of a command's output, without Rust backtraces and blank lines."""
    kept: list[str] = []
    for text in texts:
        for line in text.split("Stack backtrace:")[0].splitlines():
            if line.strip() and not line.startswith("WARNING: proceeding, even though"):
                kept.append(line.rstrip())
    return tuple(kept[-lines:])


def _message(stdout: str) -> str | None:
    """The `message` of Claude's one-line `--json` result, when there is one."""
    last = (stdout.strip().splitlines() or [""])[-1]
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        return None
    message = data.get("message") if isinstance(data, dict) else None
    return message.splitlines()[0] if isinstance(message, str) and message else None


# ---------------------------------------------------------------------------------- planning


@dataclass
class Planner:
    session: Session
    report: preflight.Report
    opts: Options
    config: Any = None
    steps: list[Step] = field(default_factory=list)
    covered: set[str] = field(default_factory=set)

    @property
    def env(self) -> dict[str, str]:
        return self.session.env

    @property
    def cwd(self) -> Path:
        return self.report.repo.root if self.report.repo else self.session.cwd

    def failed(self, check_id: str) -> Check | None:
        return next((c for c in self.report.checks if c.id == check_id and c.failed), None)

    def short(self, path: Path | str) -> str:
        text, home = str(path), str(self.session.home).rstrip("/")
        return "~" + text[len(home) :] if home and text.startswith(home + "/") else text

    def add(self, step: Step) -> str:
        self.steps.append(step)
        self.covered.add(step.check)
        return step.id

    def manual(self, check: str, title: str, command: str) -> None:
        self.add(
            Step(id=f"you.{check}.{len(self.steps)}", check=check, title=title, command=command)
        )

    def run_argv(self, argv: Sequence[str], timeout: float) -> Result:
        r = proc.run(argv, cwd=self.cwd, env=self.env, timeout=timeout)
        lines = tail(r.stdout, r.stderr)
        if r.ok:
            said = _message(r.stdout)
            return Result(True, "done" + (f" · {said}" if said else ""), lines)
        return Result(False, f"exited {r.returncode}", lines)

    def query(self, argv: Sequence[str]) -> Any:
        """A `--json` listing, or None when it cannot be had (the manual remedy then applies)."""
        try:
            r = proc.run(argv, cwd=self.cwd, env=self.env, timeout=QUERY_TIMEOUT)
            return json.loads(r.stdout) if r.ok else None
        except (PlanBuildError, json.JSONDecodeError):
            return None


def plan(session: Session, report: preflight.Report, opts: Options) -> list[Step]:
    config = None
    if report.repo is not None:
        from plan_build.config import load

        config = load(report.repo.root)
    p = Planner(session, report, opts, config)
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
        if proc.which(name, p.env) is not None:  # there, but broken: not mechanical
            p.manual(check.id, check.detail, check.remediation or f"npm install -g {spec}")
            continue
        if npm is None:
            p.manual(
                check.id,
                f"install {name}: npm is not on PATH",
                f"install Node.js with npm (https://nodejs.org, or your package manager), "
                f"then: npm install -g {spec}",
            )
            continue
        if not prefix:
            prefix.append(npm_prefix(p, npm))
        argv = [npm, "install", "-g", spec]
        planned[name] = p.add(
            Step(
                id=f"tool.{name}",
                check=check.id,
                title=f"install {name} ({spec}) with npm",
                command=proc.quote(["npm", "install", "-g", spec]),
                changes=(f"npm's global packages under {p.short(prefix[0])}",),
                remedy=(
                    "read npm's error above; if the global directory needs root, point npm at a "
                    "directory of yours (npm config set prefix ~/.local) and rerun - plan-build "
                    "never uses sudo"
                ),
                action=partial(p.run_argv, argv, NPM_TIMEOUT),
                verify=partial(tool_problem, p, name, prefix[0]),
            )
        )
    check = p.failed("tool.coderabbit")
    if check is not None and proc.which("coderabbit", p.env) is None:
        p.manual(
            check.id,
            "install CodeRabbit yourself (plan-build never pipes a download into a shell)",
            sources.CODERABBIT_INSTALL + "   # or: brew install coderabbit",
        )
    return planned


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
    return None if check.status == "pass" else check.detail


# ------------------------------------------------------------------------------ Claude plugins


def needed_claude_plugins(mode: str) -> list[str]:
    needed = ["agentmemory@agentmemory"]
    if mode == "standard":
        needed.insert(0, "mattpocock-skills@mattpocock")
    return needed


def claude_dir(env: Mapping[str, str], home: Path) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"


def claude_scope(entries: Sequence[Mapping[str, Any]], cwd: Path) -> str:
    """The scope the user already installs plugins in (most used; user on a tie or none)."""
    counts = {"user": 0, "project": 0, "local": 0}
    for e in entries:
        scope = e.get("scope")
        builtin = str(e.get("id", "")).endswith("@builtin")
        if not builtin and scope in counts and plugins._applies(e, cwd):
            counts[str(scope)] += 1
    best = max(counts.values())
    return "user" if counts["user"] == best else max(counts, key=lambda s: counts[s])


def scope_files(p: Planner, scope: str) -> tuple[str, ...]:
    cdir = claude_dir(p.env, p.session.home)
    settings = {
        "user": cdir / "settings.json",
        "project": p.cwd / ".claude" / "settings.json",
        "local": p.cwd / ".claude" / "settings.local.json",
    }[scope]
    return (p.short(settings), p.short(cdir / "plugins") + "/")


def claude_entries(p: Planner, plugin: str) -> list[dict[str, Any]]:
    data = p.query(["claude", "plugin", "list", "--json"])
    entries = data.get("installed") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        return []
    return [
        e
        for e in entries
        if isinstance(e, dict) and e.get("id") == plugin and plugins._applies(e, p.cwd)
    ]


def claude_steps(p: Planner, tool_step: str | None) -> None:
    wanted = [
        (plugin, check)
        for plugin in needed_claude_plugins(p.opts.mode)
        if (check := p.failed(plugins._check_id("claude", plugin))) is not None
    ]
    if not wanted:
        return
    present = proc.which("claude", p.env) is not None
    if not present and tool_step is None:
        return  # the tool's own item comes first; the rest is the report's remediation
    entries: list[Any] = []
    markets: list[Any] = []
    if present:
        listed = p.query(["claude", "plugin", "list", "--json"])
        listed = listed.get("installed") if isinstance(listed, dict) else listed
        known = p.query(["claude", "plugin", "marketplace", "list", "--json"])
        if not isinstance(listed, list) or not isinstance(known, list):
            for _, check in wanted:
                p.manual(check.id, check.detail, check.remediation or "see the report")
            return
        entries = [e for e in listed if isinstance(e, dict)]
        markets = [m.get("name") for m in known if isinstance(m, dict)]
    scope = claude_scope(entries, p.cwd)
    base = (tool_step,) if tool_step else ()
    for plugin, check in wanted:
        name, mkt = plugin.split("@", 1)
        mine = [e for e in entries if e.get("id") == plugin and plugins._applies(e, p.cwd)]
        if mine:
            own = str(mine[0].get("scope") or scope)
            argv = ["claude", "plugin", "enable", plugin, "--scope", own, "--json"]
            p.add(
                Step(
                    id=f"claude.enable.{name}",
                    check=check.id,
                    title=f"enable the Claude plugin {plugin} ({own} scope)",
                    command=proc.quote(argv),
                    changes=scope_files(p, own)[:1],
                    needs=base,
                    remedy=_claude_disabled_remedy(p, plugin, own),
                    action=partial(p.run_argv, argv, PLUGIN_TIMEOUT),
                    verify=partial(claude_problem, p, plugin),
                )
            )
            continue
        needs = base
        if mkt not in markets:
            src = sources.marketplace(mkt, p.env, p.config)
            argv = ["claude", "plugin", "marketplace", "add", src.source, "--scope", scope]
            argv.append("--json")
            step_id = f"claude.marketplace.{mkt}"
            if all(s.id != step_id for s in p.steps):
                p.add(
                    Step(
                        id=step_id,
                        check=check.id,
                        title=f"add the Claude plugin marketplace {mkt} from {src.source}",
                        command=proc.quote(argv),
                        changes=scope_files(p, scope),
                        needs=base,
                        remedy=_source_remedy(src),
                        action=partial(p.run_argv, argv, PLUGIN_TIMEOUT),
                        verify=partial(claude_market_problem, p, mkt, src),
                    )
                )
            needs = (*base, step_id)
        argv = ["claude", "plugin", "install", plugin, "--scope", scope, "--json"]
        p.add(
            Step(
                id=f"claude.plugin.{name}",
                check=check.id,
                title=f"install the Claude plugin {plugin} ({scope} scope)",
                command=proc.quote(argv),
                changes=scope_files(p, scope),
                needs=needs,
                remedy=_claude_disabled_remedy(p, plugin, scope),
                action=partial(p.run_argv, argv, PLUGIN_TIMEOUT),
                verify=partial(claude_problem, p, plugin),
            )
        )


def _source_remedy(src: sources.Source) -> str:
    var = sources.env_var(src.marketplace)
    return (
        f"check that {src.source} is a plugin marketplace you can reach (from {src.origin}); "
        f"set another source with {var} or setup.marketplaces.{src.marketplace} in "
        ".plan-build.yaml"
    )


def _claude_disabled_remedy(p: Planner, plugin: str, scope: str) -> str:
    return (
        f"claude plugin enable {plugin} --scope {scope}; if it stays disabled, look for "
        f"enabledPlugins in {scope_files(p, scope)[0]} and in managed settings"
    )


def claude_problem(p: Planner, plugin: str) -> str | None:
    mine = claude_entries(p, plugin)
    if not mine:
        return f"{plugin} is still not listed by `claude plugin list --json`"
    if not any(e.get("enabled") is True for e in mine):
        return f"{plugin} is installed but still disabled"
    return None


def claude_market_problem(p: Planner, mkt: str, src: sources.Source) -> str | None:
    known = p.query(["claude", "plugin", "marketplace", "list", "--json"])
    names = [m.get("name") for m in known or [] if isinstance(m, dict)]
    if mkt not in names:
        return f"{src.source} was added, but no marketplace named {mkt} is listed"
    return None


# -------------------------------------------------------------------------------- Codex plugin


def codex_steps(p: Planner, tool_step: str | None) -> None:
    check = p.failed(plugins._check_id("codex", CODEX_PLUGIN))
    if check is None:
        return
    config = codexconfig.path(p.env, p.session.home)
    try:  # Codex cannot read a broken file either: nothing else is worth planning
        codexconfig.parse(config)
    except PlanBuildError as exc:
        p.manual(check.id, exc.what, exc.fix or "fix the file")
        return
    present = proc.which("codex", p.env) is not None
    if not present and tool_step is None:
        return
    entries: list[Any] = []
    markets: list[Any] = []
    if present:
        listed = p.query(["codex", "plugin", "list", "--json"])
        known = p.query(["codex", "plugin", "marketplace", "list", "--json"])
        if not (isinstance(listed, dict) and isinstance(listed.get("installed"), list)) or not (
            isinstance(known, dict) and isinstance(known.get("marketplaces"), list)
        ):
            p.manual(check.id, check.detail, check.remediation or "see the report")
            return
        entries = [e for e in listed["installed"] if isinstance(e, dict)]
        markets = [m.get("name") for m in known["marketplaces"] if isinstance(m, dict)]
    base = (tool_step,) if tool_step else ()
    files = (p.short(config), p.short(config.parent / "plugins") + "/")
    installed = any(e.get("pluginId") == CODEX_PLUGIN for e in entries)
    needs = base
    name, mkt = CODEX_PLUGIN.split("@", 1)
    if not installed:
        if mkt not in markets:
            src = sources.marketplace(mkt, p.env, p.config)
            argv = ["codex", "plugin", "marketplace", "add", src.source, "--json"]
            needs = (
                *base,
                p.add(
                    Step(
                        id=f"codex.marketplace.{mkt}",
                        check=check.id,
                        title=f"add the Codex plugin marketplace {mkt} from {src.source}",
                        command=proc.quote(argv),
                        changes=(files[0], p.short(config.parent) + "/ (a Git source's copy)"),
                        needs=base,
                        remedy=_source_remedy(src),
                        action=lambda: p.run_argv(argv, PLUGIN_TIMEOUT),
                        verify=lambda: codex_market_problem(p, mkt, src),
                    )
                ),
            )
        add_argv = ["codex", "plugin", "add", CODEX_PLUGIN, "--json"]
        needs = (
            *base,
            p.add(
                Step(
                    id=f"codex.plugin.{name}",
                    check=check.id,
                    title=f"install the Codex plugin {CODEX_PLUGIN}",
                    command=proc.quote(add_argv),
                    changes=files,
                    needs=needs,
                    remedy=f"run `{proc.quote(add_argv)}` yourself and read its error; if it "
                    f'stays disabled, set enabled = true under [plugins."{CODEX_PLUGIN}"] in '
                    f"{p.short(config)}",
                    action=lambda: p.run_argv(add_argv, PLUGIN_TIMEOUT),
                    verify=lambda: codex_problem(p, need_enabled=True),  # add sets enabled
                )
            ),
        )
    if installed:  # and disabled, or the check would have passed
        p.add(
            Step(
                id=f"codex.enable.{name}",
                check=check.id,
                title=f"enable the Codex plugin {CODEX_PLUGIN} in {p.short(config)}",
                command=f'set enabled = true under [plugins."{CODEX_PLUGIN}"] in '
                f"{p.short(config)} (that key only; every other byte is kept)",
                changes=files[:1],
                needs=needs,
                remedy=(
                    f'check [plugins."{CODEX_PLUGIN}"] in {p.short(config)} and any profile '
                    "or -c override that turns it off"
                ),
                action=lambda: _codex_enable(config),
                verify=lambda: codex_problem(p, need_enabled=True),
            )
        )


def _codex_enable(config: Path) -> Result:
    changed = codexconfig.enable(config, CODEX_PLUGIN)
    return Result(True, "edited " + str(config) if changed else "already enabled in the file")


def codex_problem(p: Planner, *, need_enabled: bool) -> str | None:
    data = p.query(["codex", "plugin", "list", "--json"])
    if not isinstance(data, dict) or not isinstance(data.get("installed"), list):
        return "`codex plugin list --json` did not answer with a plugin list"
    mine = [
        e for e in data["installed"] if isinstance(e, dict) and e.get("pluginId") == CODEX_PLUGIN
    ]
    if not mine:
        return f"{CODEX_PLUGIN} is still not listed by `codex plugin list --json`"
    if need_enabled and not any(e.get("enabled") is True for e in mine):
        return f"{CODEX_PLUGIN} is installed but still disabled"
    return None


def codex_market_problem(p: Planner, mkt: str, src: sources.Source) -> str | None:
    known = p.query(["codex", "plugin", "marketplace", "list", "--json"])
    names = [
        m.get("name")
        for m in (known or {}).get("marketplaces", [])
        if isinstance(known, dict) and isinstance(m, dict)
    ]
    if mkt not in names:
        return f"{src.source} was added, but no marketplace named {mkt} is listed"
    return None


# --------------------------------------------------------------------------------- AgentMemory


def state_dir(env: Mapping[str, str], home: Path) -> Path:
    base = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(base) / "plan-build"


def memory_steps(p: Planner) -> None:
    check = p.failed("memory.server")
    if check is None:
        return
    url = memory.base_url(p.env)
    start = f"AGENTMEMORY_SLOTS=true npx -y {sources.AGENTMEMORY_PACKAGE}"
    if check.cause == "slots_off":
        p.manual(
            check.id,
            f"turn on AgentMemory's memory slots (the server at {url} runs without them)",
            "set AGENTMEMORY_SLOTS=true in the server's environment (or in ~/.agentmemory/.env) "
            f"and restart it: agentmemory stop, then {start}",
        )
        return
    if check.cause != "unreachable":
        p.manual(check.id, check.detail, check.remediation or "see the report")
        return
    if not memory._is_loopback(url):
        p.manual(
            check.id,
            f"start AgentMemory at {url} (AGENTMEMORY_URL points off this machine)",
            f"on that machine: {start}",
        )
        return
    npx = proc.which("npx", p.env)
    if npx is None:
        p.manual(
            check.id,
            "start AgentMemory: npx is not on PATH",
            f"install Node.js with npm (https://nodejs.org), then: {start}",
        )
        return
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    argv = [npx, "-y", sources.AGENTMEMORY_PACKAGE]
    shown = start
    if port is not None and port != memory.DEFAULT_PORT:
        argv += ["--port", str(port)]
        shown += f" --port {port}"
    log_path = state_dir(p.env, p.session.home) / "agentmemory.log"
    wait = float(p.config.get("setup.memory_wait", MEMORY_WAIT)) if p.config else MEMORY_WAIT
    p.add(
        Step(
            id="memory.server",
            check=check.id,
            title=f"start AgentMemory in the background (slots on) and wait up to {wait:g}s "
            f"for {url}",
            command=shown,
            changes=(p.short(log_path) + " (its log)", "~/.agentmemory/ (its data)"),
            remedy=f"start it yourself to watch it: {start}; its log is {p.short(log_path)}",
            action=lambda: start_memory(p, argv, log_path, url, wait),
            verify=lambda: memory_problem(p),
        )
    )


def start_memory(p: Planner, argv: list[str], log_path: Path, url: str, wait: float) -> Result:
    env = {**p.env, "AGENTMEMORY_SLOTS": "true"}
    server = proc.spawn_detached(argv, env=env, cwd=p.session.home, log_path=log_path)
    try:
        return _wait_for_memory(p, server, log_path, url, wait)
    except BaseException:  # Ctrl-C while waiting: no half-started server is left behind
        server.stop()
        raise


def _wait_for_memory(
    p: Planner, server: proc.Detached, log_path: Path, url: str, wait: float
) -> Result:
    deadline = time.monotonic() + wait
    while True:
        live = memory.get(f"{url}/agentmemory/livez", None, timeout=2.0)
        if live.status == 200 and isinstance(live.body, dict) and live.body.get("status") == "ok":
            return Result(True, f"answering at {url} (pid {server.pid}, log {p.short(log_path)})")
        code = server.exited()
        if code is not None:
            return Result(False, f"it exited {code} before answering", _log_tail(log_path))
        if time.monotonic() >= deadline:
            server.stop()
            return Result(
                False,
                f"no answer from {url}/agentmemory/livez within {wait:g}s; it was stopped",
                _log_tail(log_path),
            )
        time.sleep(0.25)


def _log_tail(log_path: Path) -> tuple[str, ...]:
    try:
        return tail(log_path.read_text(encoding="utf-8", errors="replace")[-8192:])
    except OSError:
        return ()


def memory_problem(p: Planner) -> str | None:
    check = memory.check_server(p.env, p.session.home)
    return None if check.status in ("pass", "warn") else f"{check.detail} ({check.remediation})"


# ---------------------------------------------------------------------- skills and identity


def skill_steps(p: Planner) -> None:
    from plan_build.release import SKILL_DIRS, root_dir
    from plan_build.release import install as installer

    root = root_dir(p.env)
    home = p.session.home
    if not (root / "current").is_symlink():
        return  # nothing to link to: a failing skill check stays the user's (see its fix)
    links = {
        home / ".claude" / "skills" / d / "SKILL.md": root / "current" / n
        for n, d in SKILL_DIRS.items()
    }
    launcher = home / ".local" / "bin" / "plan-build"
    missing = [
        link
        for link, target in links.items()
        if not (link.is_symlink() and os.readlink(link) == str(target))
    ]
    if not missing and installer._is_ours_launcher(launcher):
        return

    def install() -> Result:
        done = installer.install(
            root, home, launcher.parent, force=False, path_env=p.env.get("PATH", "")
        )
        note = "" if done.on_path else f"; add {p.short(launcher.parent)} to PATH"
        return Result(True, f"{len(done.changed)} installed{note}", tuple(done.changed))

    p.add(
        Step(
            id="skills",
            check="skill.readable",
            title="link the Claude Code skills to the active release and install the launcher",
            command="plan-build release.install",
            changes=(*(p.short(link) for link in links), p.short(launcher)),
            remedy="move the files it names away, or run plan-build release.install --force",
            action=install,
            verify=lambda: (
                None
                if all(link.is_symlink() for link in links)
                else "the skill links are still missing"
            ),
        )
    )


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


# ---------------------------------------------------------------------------------- running


def render_plan(steps: Sequence[Step], session: Session) -> str:
    runnable = [s for s in steps if s.runs]
    yours = [s for s in steps if not s.runs]
    if not steps:
        return "setup: nothing to do"
    lines = [f"setup plan: {len(runnable)} step(s) to run, {len(yours)} for you"]
    number = {s.id: i for i, s in enumerate(runnable, 1)}
    for s in runnable:
        lines.append(f"  {number[s.id]}. {s.title}")
        lines.append(f"     runs     {s.command}")
        if s.changes:
            lines.append(f"     changes  {', '.join(s.changes)}")
        if s.needs:
            lines.append(f"     needs    step {', '.join(str(number[n]) for n in s.needs)}")
    if yours:
        lines.append("  for you (plan-build does not do these):")
        for s in yours:
            lines.append(f"  - {s.title}")
            lines.append(f"     {session.console.arrow()} {s.command}")
    return "\n".join(lines)


def execute(session: Session, steps: Sequence[Step], *, yes: bool) -> list[Outcome]:
    con = session.console
    runnable = [s for s in steps if s.runs]
    number = {s.id: i for i, s in enumerate(runnable, 1)}
    outcomes: dict[str, Outcome] = {}
    ask, stopped = not yes, False
    for step in runnable:
        n = number[step.id]
        blocked = [d for d in step.needs if outcomes[d].status != "ok"]
        if blocked:
            why = ", ".join(f"step {number[d]} {outcomes[d].status}" for d in blocked)
            outcomes[step.id] = Outcome(step.id, "skipped", f"needs {why}")
        elif stopped:
            outcomes[step.id] = Outcome(step.id, "not_run", "you quit")
        else:
            answer = "y"
            if ask:
                answer = session.ui.choose(f"{n}. {step.title}?", CHOICES, default="n")
            if answer == "a":
                ask = False
            if answer == "q":
                stopped = True
                outcomes[step.id] = Outcome(step.id, "not_run", "you quit")
            elif answer == "n":
                outcomes[step.id] = Outcome(step.id, "declined", "you said no")
            else:
                con.say(f"{n}. {step.title}\n   $ {step.command}")
                outcomes[step.id] = run_step(step)
        report_outcome(session, n, step, outcomes[step.id])
    return list(outcomes.values())


def run_step(step: Step) -> Outcome:
    if step.action is None:  # the user's own item: never run
        return Outcome(step.id, "not_run", "yours to do")
    try:
        result = step.action()
    except PlanBuildError as exc:
        return Outcome(step.id, "failed", exc.what, (), exc.fix or step.remedy)
    if not result.ok:
        return Outcome(step.id, "failed", result.detail, result.tail, step.remedy)
    problem = step.verify() if step.verify else None
    if problem:
        return Outcome(step.id, "failed", problem, result.tail, step.remedy)
    return Outcome(step.id, "ok", result.detail, result.tail)


def report_outcome(session: Session, n: int, step: Step, out: Outcome) -> None:
    con = session.console
    if out.status in ("ok", "failed"):  # under the step's own `$ command` line
        con.say(f"   {con.mark('pass' if out.status == 'ok' else 'fail')} {out.detail}")
    else:
        con.say(f"{n}. {step.title}\n   {con.mark('skip')} {out.status}: {out.detail}")
    if out.status == "failed":
        for line in out.tail:
            con.say(f"       | {line}")
        if out.remedy:
            con.say(f"       {con.arrow()} {out.remedy}")


def run(session: Session, opts: Options) -> None:
    pf_opts = preflight.Options(mode=opts.mode, need_terminal=False)
    report = preflight.run(session, pf_opts)
    steps = plan(session, report, opts)
    con = session.console
    con.say(render_plan(steps, session))
    runnable = [s for s in steps if s.runs]
    data: dict[str, Any] = {"plan": [s.as_json() for s in steps], "outcomes": []}

    def emit(final: preflight.Report | None) -> None:
        if opts.json:
            data["report"] = final.as_json() if final else None
            jsonout.write(session.stdout, data)
            session.stdout.flush()

    if opts.dry_run:
        con.say("dry run: nothing was changed")
        emit(report)
        return
    if runnable:
        from plan_build.interact import agent_presence, agent_refusal

        found = agent_presence(session.env)
        if found.reason is not None:  # an agent may show the plan, never approve changing it
            emit(None)
            raise agent_refusal("setup (it changes this machine)", "plan-build setup", found.reason)
    if runnable and not opts.yes and not session.ui.interactive:
        emit(None)
        raise PlanBuildError(
            f"setup needs your approval for {len(runnable)} step(s) and there is no terminal "
            "to ask",
            "rerun from a terminal, or with --yes to run the whole plan above",
            code=ExitCode.APPROVAL,
        )
    outcomes = execute(session, steps, yes=opts.yes) if runnable else []
    data["outcomes"] = [o.as_json() for o in outcomes]
    final = preflight.run(session, pf_opts) if runnable else report
    con.say("")
    con.say(preflight.render(final, session))
    emit(final)
    failed = [o.id for o in outcomes if o.status == "failed"]
    if not final.ok:
        raise PlanBuildError(
            "not ready: " + ", ".join(c.id for c in final.blocking),
            None if opts.json else "apply the fixes shown above (→), then rerun plan-build setup",
            code=ExitCode.PREFLIGHT,
        )
    if failed:
        raise PlanBuildError(
            f"ready, but setup step(s) failed: {', '.join(failed)}",
            "see the failures above",
            code=ExitCode.BLOCKED,
        )
