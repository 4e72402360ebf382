"""Where `plan-build setup` gets what it installs, in one place.

- The plugin marketplaces are Git repositories on GitHub (`owner/repo`, the form both
  `claude plugin marketplace add` and `codex plugin marketplace add` accept). A mirror, a Git
  URL or a local directory can replace each one for offline use: `setup.marketplaces.<name>`
  in `.plan-build.yaml`, or `PLAN_BUILD_MARKETPLACE_<NAME>` in the environment (which wins).
- The agent CLIs' pinned npm packages and CodeRabbit's installer live in plan_build.core.pins
  (core), because review's hints print them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plan_build.core.pins import (  # one home for the pinned packages (core: review uses them too)
    AGENTMEMORY_PACKAGE,
    CODERABBIT_HINT,
    CODERABBIT_INSTALL,
    NPM_PACKAGES,
    install_hint,
    npm_install,
    npm_spec,
)

# marketplace name (the part after `@` in a plugin id) → its default source
MARKETPLACES = {
    "agentmemory": "rohitg00/agentmemory",
    "mattpocock": "mattpocock/skills",
}
ENV_PREFIX = "PLAN_BUILD_MARKETPLACE_"


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


# the system package managers setup may run for the sandbox's packages (as root only)
SANDBOX_PACKAGES = {
    "apt-get": ["apt-get", "install", "-y", "-q", "bubblewrap", "socat"],
    "dnf": ["dnf", "install", "-y", "bubblewrap", "socat"],
    "pacman": ["pacman", "-S", "--noconfirm", "--needed", "bubblewrap", "socat"],
    "zypper": ["zypper", "--non-interactive", "install", "bubblewrap", "socat"],
}


__all__ = [
    "AGENTMEMORY_PACKAGE",
    "CODERABBIT_HINT",
    "CODERABBIT_INSTALL",
    "MARKETPLACES",
    "NPM_PACKAGES",
    "SANDBOX_PACKAGES",
    "Source",
    "env_var",
    "install_hint",
    "marketplace",
    "npm_install",
    "npm_spec",
]
