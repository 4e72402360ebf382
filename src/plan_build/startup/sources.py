"""Where `plan-build setup` gets what it installs, in one place.

- The plugin marketplaces are Git repositories on GitHub (`owner/repo`, the form both
  `claude plugin marketplace add` and `codex plugin marketplace add` accept). A mirror, a Git
  URL or a local directory can replace each one for offline use: `setup.marketplaces.<name>`
  in `.plan-build.yaml`, or `PLAN_BUILD_MARKETPLACE_<NAME>` in the environment (which wins).
- The agent CLIs are npm packages at the versions the contract suite proves
  (tests/contract/versions.toml; a default-suite test keeps the two equal, because an
  installed wheel has no tests/ directory to read them from).
- CodeRabbit is not on npm: its official installer is printed, never run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# marketplace name (the part after `@` in a plugin id) → its default source
MARKETPLACES = {
    "agentmemory": "rohitg00/agentmemory",
    "mattpocock": "mattpocock/skills",
}
ENV_PREFIX = "PLAN_BUILD_MARKETPLACE_"

# tool → (npm package, pinned version)
NPM_PACKAGES = {
    "claude": ("@anthropic-ai/claude-code", "2.1.332"),
    "codex": ("@openai/codex", "0.171.0"),
}
AGENTMEMORY_PACKAGE = "@agentmemory/agentmemory"
CODERABBIT_INSTALL = "curl -fsSL https://cli.coderabbit.ai/install.sh | sh"
CODERABBIT_HINT = CODERABBIT_INSTALL + "   # or: brew install coderabbit"


@dataclass(frozen=True)
class Source:
    marketplace: str
    source: str
    origin: str  # "default", ".plan-build.yaml" or the environment variable's name


def env_var(marketplace: str) -> str:
    return ENV_PREFIX + marketplace.upper().replace("-", "_")


def marketplace(name: str, env: Mapping[str, str], config: Any = None) -> Source:
    """The source to add for marketplace `name`: environment, then config, then the default."""
    var = env_var(name)
    if env.get(var, "").strip():
        return Source(name, env[var].strip(), var)
    configured = config.get(f"setup.marketplaces.{name}") if config is not None else None
    if isinstance(configured, str) and configured.strip():
        return Source(name, configured.strip(), ".plan-build.yaml")
    if name not in MARKETPLACES:
        raise KeyError(name)
    return Source(name, MARKETPLACES[name], "default")


def npm_spec(tool: str, *, latest: bool = False) -> str:
    package, version = NPM_PACKAGES[tool]
    return f"{package}@{'latest' if latest else version}"


def npm_install(tool: str, *, latest: bool = False) -> list[str]:
    """The argv setup runs to install `tool` (npm found on PATH gives argv[0])."""
    return ["npm", "install", "-g", npm_spec(tool, latest=latest)]


def install_hint(tool: str, *, latest: bool = False) -> str | None:
    """The install command shown for `tool`, the same text preflight's remedy and setup's
    plan print (None for a tool plan-build names no installer for)."""
    if tool in NPM_PACKAGES:
        from plan_build import proc

        return proc.quote(npm_install(tool, latest=latest))
    return CODERABBIT_HINT if tool == "coderabbit" else None
