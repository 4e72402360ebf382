"""Local plugin marketplaces on disk, in the layouts the real CLIs read.

Claude Code reads `.claude-plugin/marketplace.json` and each plugin's
`.claude-plugin/plugin.json`; Codex prefers `.agents/plugins/marketplace.json` and
`.codex-plugin/plugin.json`. One directory can carry both.
"""

from __future__ import annotations

import json
from pathlib import Path

OWNER = {"name": "plan-build contract tests"}


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def build(root: Path, marketplace: str, plugin: str, version: str, *, codex: bool) -> Path:
    """A marketplace directory `root/marketplace` serving one plugin; returns the directory."""
    mkt = root / marketplace
    folder = mkt / "plugins" / plugin
    description = f"{plugin} as served to the plan-build contract suite"
    _write(
        mkt / ".claude-plugin" / "marketplace.json",
        {
            "name": marketplace,
            "owner": OWNER,
            "plugins": [
                {
                    "name": plugin,
                    "source": f"./plugins/{plugin}",
                    "description": description,
                    "version": version,
                }
            ],
        },
    )
    _write(
        folder / ".claude-plugin" / "plugin.json",
        {"name": plugin, "version": version, "description": description},
    )
    skill = folder / "skills" / f"{plugin}-hello" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(
        f"---\nname: {plugin}-hello\ndescription: says hello from {plugin}\n---\nSay hello.\n",
        encoding="utf-8",
    )
    if codex:
        _write(
            mkt / ".agents" / "plugins" / "marketplace.json",
            {
                "name": marketplace,
                "interface": {"displayName": marketplace},
                "plugins": [
                    {
                        "name": plugin,
                        "source": {"source": "local", "path": f"./plugins/{plugin}"},
                        "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
                        "category": "Productivity",
                    }
                ],
            },
        )
        _write(
            folder / ".codex-plugin" / "plugin.json",
            {
                "name": plugin,
                "version": version,
                "description": description,
                "skills": "./skills/",
            },
        )
    return mkt
