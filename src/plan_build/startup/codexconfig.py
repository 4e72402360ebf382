"""`~/.codex/config.toml`, edited one key at a time.

Codex has no `plugin enable` command: a plugin is switched on by `enabled = true` under
`[plugins."<id>"]`. plan-build changes exactly that key through tomlkit, which round-trips
every other byte (comments, order, spacing), and writes the file atomically. A file that is
not valid TOML is never edited: the error names its line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import atomic_write


def path(env: Mapping[str, str], home: Path) -> Path:
    codex_home = env.get("CODEX_HOME")
    return Path(codex_home) / "config.toml" if codex_home else home / ".codex" / "config.toml"


def _read(config: Path) -> str:
    try:
        return config.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanBuildError(
            f"{config} cannot be read ({exc.__class__.__name__}); plan-build will not edit it",
            "make it a readable UTF-8 file",
            code=ExitCode.PREFLIGHT,
        ) from exc


def parse(config: Path) -> Any:
    """The parsed document (tomlkit), or a PlanBuildError naming the bad line."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    text = _read(config)
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        message = str(exc).split(" at line ")[0]
        raise PlanBuildError(
            f"{config} line {exc.line} is not valid TOML ({message}); plan-build will not edit it",
            f"fix line {exc.line} of {config} (Codex cannot read the file either), then rerun",
            code=ExitCode.PREFLIGHT,
        ) from exc


def enable(config: Path, plugin: str) -> bool:
    """Set `enabled = true` under `[plugins."<plugin>"]`; True when the file changed.

    A symlinked config (a dotfiles checkout) is written through to its target, so the link
    stays a link."""
    import tomlkit

    target = Path(os.path.realpath(config))
    doc = parse(target)
    text = tomlkit.dumps(doc)
    plugins = doc.get("plugins")
    if plugins is None:
        plugins = tomlkit.table(is_super_table=True)
        doc["plugins"] = plugins
    if not hasattr(plugins, "get"):
        raise _not_a_table(target, "plugins")
    entry = plugins.get(plugin)
    if entry is None:
        entry = tomlkit.table()
        plugins[plugin] = entry
    if not hasattr(entry, "get"):
        raise _not_a_table(target, f'plugins."{plugin}"')
    if entry.get("enabled") is True:
        return False
    entry["enabled"] = True
    new = tomlkit.dumps(doc)
    if new == text:
        return False
    atomic_write(target, new)
    return True


def _not_a_table(config: Path, key: str) -> PlanBuildError:
    return PlanBuildError(
        f"{key} in {config} is not a table; plan-build will not rewrite it",
        f"make {key} a table ([{key}]) or set enabled = true there yourself",
        code=ExitCode.PREFLIGHT,
    )
