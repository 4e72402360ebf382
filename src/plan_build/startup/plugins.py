"""Plugin state as Claude Code and Codex report it (`plugin list --json`).

Claude prints a JSON array that always includes `*@builtin` entries; Codex prints a
pretty-printed object with `installed`. Both are filtered by id. A plugin that is enabled in
settings but not installed is not listed, so "missing" means not installed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core import proc
from plan_build.core.checks import Check
from plan_build.startup.sources import MARKETPLACES, install_hint

LIST_TIMEOUT = 20.0

CLAUDE_INSTALL = {
    plugin: f"claude plugin marketplace add {MARKETPLACES[plugin.split('@')[1]]} && "
    f"claude plugin install {plugin}"
    for plugin in ("agentmemory@agentmemory", "mattpocock-skills@mattpocock")
}
CODEX_INSTALL = (
    f"codex plugin marketplace add {MARKETPLACES['agentmemory']} && "
    "codex plugin add agentmemory@agentmemory"
)


def _check_id(tool: str, plugin: str) -> str:
    return f"{tool}.plugin.{plugin.split('@', 1)[0]}"


def _list(tool: str, env: Mapping[str, str], cwd: Path) -> tuple[Any, str | None, str | None]:
    """(parsed JSON, problem, remediation) from `<tool> plugin list --json`."""
    argv = [tool, "plugin", "list", "--json"]
    try:
        r = proc.run(argv, cwd=cwd, env=env, timeout=LIST_TIMEOUT)
    except proc.CommandNotFound:
        return (
            None,
            f"{tool} is not on PATH, so its plugins cannot be listed",
            f"install {tool} first (see tool.{tool})",
        )
    except proc.CommandTimeout:
        return (
            None,
            f"`{proc.quote(argv)}` did not answer within {LIST_TIMEOUT:g}s",
            f"run `{proc.quote(argv)}` yourself to see what it waits for",
        )
    if not r.ok:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ["no output"]
        return (
            None,
            f"`{proc.quote(argv)}` exited {r.returncode}: {tail[0]}",
            f"run `{proc.quote(argv)}` yourself and fix what it reports",
        )
    try:
        return json.loads(r.stdout), None, None
    except (json.JSONDecodeError, RecursionError):
        return (
            None,
            f"`{proc.quote(argv)}` printed something that is not JSON",
            f"update {tool}, then run `{proc.quote(argv)}` yourself to see its output",
        )


def claude_checks(plugins: list[str], env: Mapping[str, str], cwd: Path) -> list[Check]:
    data, problem, fix = _list("claude", env, cwd)
    entries: Any = []
    if problem is None:
        # --available wraps the same list in {"installed": [...], "available": [...]}
        entries = data.get("installed") if isinstance(data, dict) else data
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            problem = "`claude plugin list --json` did not print a list of plugins"
            fix = f"update Claude Code ({install_hint('claude')})"
    checks = []
    for plugin in plugins:
        cid = _check_id("claude", plugin)
        degradable = plugin.startswith("agentmemory@")
        if problem is not None:
            checks.append(Check(cid, "fail", problem, fix, degradable=degradable, cause="unlisted"))
            continue
        mine = [e for e in entries if e.get("id") == plugin and _applies(e, cwd)]
        if any(e.get("enabled") is True for e in mine):
            version = next((str(e.get("version")) for e in mine if e.get("enabled")), "?")
            checks.append(
                Check(cid, "pass", f"{plugin} {version} enabled", None, degradable=degradable)
            )
        elif mine:
            checks.append(
                Check(
                    cid,
                    "fail",
                    f"{plugin} is installed but disabled",
                    f"claude plugin enable {plugin}",
                    degradable=degradable,
                    cause="disabled",
                )
            )
        else:
            checks.append(
                Check(
                    cid,
                    "fail",
                    f"{plugin} is not installed",
                    CLAUDE_INSTALL.get(plugin, f"claude plugin install {plugin}"),
                    degradable=degradable,
                    cause="missing",
                )
            )
    return checks


def _applies(entry: Mapping[str, Any], cwd: Path) -> bool:
    """User-scope entries apply everywhere; project/local ones only to their own project."""
    project = entry.get("projectPath")
    if entry.get("scope") in (None, "user", "managed") or not project:
        return True
    try:
        return cwd.resolve().is_relative_to(Path(str(project)).resolve())
    except OSError:
        return False


def codex_config_path(env: Mapping[str, str]) -> str:
    codex_home = env.get("CODEX_HOME")
    return os.path.join(codex_home, "config.toml") if codex_home else "~/.codex/config.toml"


def codex_check(plugin: str, env: Mapping[str, str], cwd: Path) -> Check:
    cid = _check_id("codex", plugin)
    data, problem, fix = _list("codex", env, cwd)
    if problem is None and not (isinstance(data, dict) and isinstance(data.get("installed"), list)):
        problem = "`codex plugin list --json` did not print an object with `installed`"
        fix = f"update Codex ({install_hint('codex')})"
    if problem is not None:
        return Check(cid, "fail", problem, fix, degradable=True, cause="unlisted")
    mine = [e for e in data["installed"] if isinstance(e, dict) and e.get("pluginId") == plugin]
    if any(e.get("enabled") is True for e in mine):
        version = next(str(e.get("version")) for e in mine if e.get("enabled") is True)
        return Check(cid, "pass", f"{plugin} {version} enabled", None, degradable=True)
    if mine:
        return Check(
            cid,
            "fail",
            f"{plugin} is installed but disabled",
            f'set enabled = true under [plugins."{plugin}"] in {codex_config_path(env)}',
            degradable=True,
            cause="disabled",
        )
    return Check(
        cid, "fail", f"{plugin} is not installed", CODEX_INSTALL, degradable=True, cause="missing"
    )
