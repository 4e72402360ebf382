"""What keeps a wave task's Codex apart from the others and from the user's refs (ADR 0197).

Parallel `codex exec` runs sharing one CODEX_HOME were reported to interfere through session
restore (openai/codex#11435), so each task gets its own home, with the user's configuration,
credentials, plugins and skills linked in and its sessions and history its own. The home is
kept beside the task's worktree, out of the temporary directory: Codex refuses to create its
sandbox helper under /tmp or $TMPDIR. Where the repository itself lies there, Codex's
workspace-write sandbox would leave the whole git dir writable through /tmp: its writable
roots are then the worktree and a private temporary folder only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core.gitrepo import Repo

# a Codex home's entries that are one run's state, never shared between parallel runs
CODEX_STATE = ("sessions", "archived_sessions", "history.jsonl", "log", "tmp", ".tmp")


def temp_roots(env: Mapping[str, str]) -> list[Path]:
    roots = [Path("/tmp")]  # noqa: S108 - only compared with, never written to
    if env.get("TMPDIR"):
        roots.append(Path(env["TMPDIR"]))
    return [r.resolve() for r in roots if r.exists()]


def in_temp(path: Path, roots: Sequence[Path]) -> bool:
    """`path` lies under one of `roots` (`temp_roots`: where Codex refuses its helper)."""
    where = path.resolve()
    return any(where == r or r in where.parents for r in roots)


def codex_dir(wt: Path) -> Path:
    """The task's own Codex folder, beside its worktree: `.TASK-ID.codex/{home,tmp}`."""
    return wt.parent / f".{wt.name}.codex"


@dataclass
class CodexSetting:
    env: dict[str, str] = field(default_factory=dict)  # added to Codex's environment
    flags: list[str] = field(default_factory=list)  # added to `codex exec`
    notes: list[str] = field(default_factory=list)  # said once, for the console


def codex_setting(
    user: Repo,
    wt: Repo,
    env: Mapping[str, str],
    home: Path | None,
    roots: Sequence[Path] | None = None,
) -> CodexSetting:
    """What keeps a wave task's Codex apart (ADR 0197): its own CODEX_HOME (the user's
    configuration and credentials linked in, its sessions and history its own), and, where the
    repository's git dir lies in a temporary directory Codex's sandbox leaves writable, a
    sandbox whose writable roots are the worktree and a private temporary folder only."""
    out = CodexSetting()
    roots = temp_roots(env) if roots is None else roots  # the test suite names its own
    folder = codex_dir(wt.root)
    source = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else (home or Path.home()) / ".codex"
    if in_temp(folder, roots):
        out.notes.append(
            "each task's Codex shares your Codex home: the repository lies in a temporary "
            "directory, where Codex refuses its sandbox helper"
        )
    elif source.is_dir():
        own = folder / "home"
        own.mkdir(parents=True, exist_ok=True)
        for entry in source.iterdir():
            if entry.name in CODEX_STATE or ".sqlite" in entry.name:
                continue
            link = own / entry.name
            if not os.path.lexists(link):
                link.symlink_to(entry)
        out.env["CODEX_HOME"] = str(own)
    if in_temp(user.common_dir, roots):
        tmp = folder / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        out.env["TMPDIR"] = str(tmp)
        out.flags += [
            "-c",
            "sandbox_workspace_write.exclude_slash_tmp=true",
            "-c",
            "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            "-c",
            f"sandbox_workspace_write.writable_roots={json.dumps([str(tmp)])}",
        ]
    return out


__all__ = [
    "CODEX_STATE",
    "CodexSetting",
    "codex_dir",
    "codex_setting",
    "in_temp",
    "temp_roots",
]
