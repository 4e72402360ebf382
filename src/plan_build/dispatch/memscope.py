"""The AgentMemory scope a dispatch gives Codex: project identity, memory mode, the checkpoint
slot and the environment that carries them.

The prompt promises Codex a memory scope; the environment must keep that promise, so both are
derived here from the same identity (ADR 0021: one slot label for every project).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from plan_build.core import sessionvars
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.dispatch import memslot

MEMORY_MODES = sessionvars.MEMORY_MODES
SLOT_LABEL = "workflow_status"


def memory_mode(env: Mapping[str, str]) -> str:
    mode = env.get(sessionvars.MEMORY_MODE) or "required"
    if mode not in MEMORY_MODES:
        raise usage(
            f"{sessionvars.MEMORY_MODE} is {mode!r}; it must be required or degraded",
            f"relaunch through plan-build architect, or unset {sessionvars.MEMORY_MODE}",
        )
    return mode


def project_identity(root: Path, env: Mapping[str, str]) -> dict[str, str | None]:
    path = root / ".agentmemory-project"
    try:
        value = path.read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError):
        value = []
    if value and value[0].strip():
        return {"id": value[0].strip(), "source": ".agentmemory-project", "missing": None}
    if env.get("AGENTMEMORY_PROJECT_NAME"):
        return {"id": env["AGENTMEMORY_PROJECT_NAME"], "source": "env", "missing": None}
    return {"id": None, "source": None, "missing": ".agentmemory-project is missing"}


def checkpoint(root: Path, env: Mapping[str, str], home: Path) -> memslot.SlotRead:
    """The workflow_status checkpoint, or "foreign" when it belongs to another project."""
    slot = memslot.read_slot(SLOT_LABEL, env, home)
    owner = memslot.named_project(slot.content or "")
    project = project_identity(root, env)["id"]
    if owner and project and owner != project:
        # one label for every project (ADR 0021): never pass on another project's state
        return memslot.SlotRead("foreign", reason=owner)
    return slot


def codex_env(root: Path, env: Mapping[str, str], mode: str) -> dict[str, str]:
    """The session's environment plus the memory scope the prompt promises Codex: the
    committed identity, the memory mode and whether context is injected. An inherited
    AGENTMEMORY_PROJECT_NAME that names another project is refused (exit 3)."""
    from plan_build.core.agentmemory import memory_env

    ident = project_identity(root, env)
    inherited = env.get("AGENTMEMORY_PROJECT_NAME")
    value = ident["id"]
    if ident["source"] == ".agentmemory-project" and inherited and inherited != value:
        raise PlanBuildError(
            f"AGENTMEMORY_PROJECT_NAME is {inherited!r}, but this repository's identity "
            f"(.agentmemory-project) is {value!r}: Codex would write memory into another "
            "project",
            "run dispatch from a session launched in this repository (plan-build "
            "architect), or unset AGENTMEMORY_PROJECT_NAME",
            code=ExitCode.PREFLIGHT,
        )
    if not value:
        return dict(env)
    return {**env, **memory_env(value, degraded=mode == "degraded")}
