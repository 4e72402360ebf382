"""The `setup` steps for the Claude Code and Codex plugins plan-build needs.

Each missing plugin becomes, in order, the marketplace add (when its marketplace is not
known), the install and, for one that is installed but off, the enable; every step is checked
against the tool's own `plugin list --json` after it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from plan_build.core import proc
from plan_build.core.errors import PlanBuildError
from plan_build.startup import codexconfig, plugins, sources
from plan_build.startup.setupstep import Planner, Result, Step

CODEX_PLUGIN = "agentmemory@agentmemory"


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
            p.argv_step(
                f"claude.enable.{name}",
                check.id,
                f"enable the Claude plugin {plugin} ({own} scope)",
                ["claude", "plugin", "enable", plugin, "--scope", own, "--json"],
                changes=scope_files(p, own)[:1],
                needs=base,
                remedy=_claude_disabled_remedy(p, plugin, own),
                verify=partial(claude_problem, p, plugin),
            )
            continue
        needs = base
        if mkt not in markets:
            src = sources.marketplace(mkt, p.env, p.config)
            argv = ["claude", "plugin", "marketplace", "add", src.source, "--scope", scope]
            step_id = f"claude.marketplace.{mkt}"
            if all(s.id != step_id for s in p.steps):
                p.argv_step(
                    step_id,
                    check.id,
                    f"add the Claude plugin marketplace {mkt} from {src.source}",
                    [*argv, "--json"],
                    changes=scope_files(p, scope),
                    needs=base,
                    remedy=_source_remedy(src),
                    verify=partial(claude_market_problem, p, mkt, src),
                )
            needs = (*base, step_id)
        p.argv_step(
            f"claude.plugin.{name}",
            check.id,
            f"install the Claude plugin {plugin} ({scope} scope)",
            ["claude", "plugin", "install", plugin, "--scope", scope, "--json"],
            changes=scope_files(p, scope),
            needs=needs,
            remedy=_claude_disabled_remedy(p, plugin, scope),
            verify=partial(claude_problem, p, plugin),
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
    name, mkt = CODEX_PLUGIN.split("@", 1)
    if installed:  # and disabled, or the check would have passed
        p.add(
            Step(
                id=f"codex.enable.{name}",
                check=check.id,
                title=f"enable the Codex plugin {CODEX_PLUGIN} in {p.short(config)}",
                command=f'set enabled = true under [plugins."{CODEX_PLUGIN}"] in '
                f"{p.short(config)} (that key only; every other byte is kept)",
                changes=files[:1],
                needs=base,
                remedy=(
                    f'check [plugins."{CODEX_PLUGIN}"] in {p.short(config)} and any profile '
                    "or -c override that turns it off"
                ),
                action=lambda: _codex_enable(config),
                verify=lambda: codex_problem(p, need_enabled=True),
            )
        )
        return
    needs = base
    if mkt not in markets:
        src = sources.marketplace(mkt, p.env, p.config)
        market = p.argv_step(
            f"codex.marketplace.{mkt}",
            check.id,
            f"add the Codex plugin marketplace {mkt} from {src.source}",
            ["codex", "plugin", "marketplace", "add", src.source, "--json"],
            changes=(files[0], p.short(config.parent) + "/ (a Git source's copy)"),
            needs=base,
            remedy=_source_remedy(src),
            verify=partial(codex_market_problem, p, mkt, src),
        )
        needs = (*base, market)
    add_argv = ["codex", "plugin", "add", CODEX_PLUGIN, "--json"]
    p.argv_step(
        f"codex.plugin.{name}",
        check.id,
        f"install the Codex plugin {CODEX_PLUGIN}",
        add_argv,
        changes=files,
        needs=needs,
        remedy=f"run `{proc.quote(add_argv)}` yourself and read its error; if it "
        f'stays disabled, set enabled = true under [plugins."{CODEX_PLUGIN}"] in '
        f"{p.short(config)}",
        verify=partial(codex_problem, p, need_enabled=True),  # add sets enabled
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
