"""The agent CLIs plan-build installs, pinned: one home for the commands `setup` runs and the
install hints preflight, review and the WSL checks print, so no hint drifts from what setup does.

- The agent CLIs are npm packages at the versions the contract suite proves
  (tests/contract/versions.toml; a default-suite test keeps the two equal, because an
  installed wheel has no tests/ directory to read them from).
- CodeRabbit is not on npm: its official installer is printed, never run.
"""

from __future__ import annotations

# tool → (npm package, pinned version)
NPM_PACKAGES = {
    "claude": ("@anthropic-ai/claude-code", "2.1.332"),
    "codex": ("@openai/codex", "0.171.0"),
}
AGENTMEMORY_PACKAGE = "@agentmemory/agentmemory"
CODERABBIT_INSTALL = "curl -fsSL https://cli.coderabbit.ai/install.sh | sh"
CODERABBIT_HINT = CODERABBIT_INSTALL + "   # or: brew install coderabbit"


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
        from plan_build.core import proc

        return proc.quote(npm_install(tool, latest=latest))
    return CODERABBIT_HINT if tool == "coderabbit" else None


__all__ = [
    "AGENTMEMORY_PACKAGE",
    "CODERABBIT_HINT",
    "CODERABBIT_INSTALL",
    "NPM_PACKAGES",
    "install_hint",
    "npm_install",
    "npm_spec",
]
