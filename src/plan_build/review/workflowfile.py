"""`workflow.json`: one workflow's state, in codex-review's exact format.

Keys are written in codex-review's order with a 2-space indent and a trailing newline, and
strings are escaped the way Go's encoder escapes them, so a file that plan-build loads and
saves unchanged stays byte-identical. Unlike codex-review, keys plan-build does not know are
kept (after the known ones) instead of being dropped on the next save.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import MAX_JSON_BYTES, StateFileError, atomic_write, loads_json
from plan_build.review.layout import PHASES, WorkflowDir, guard, stamp, workflows_dir

VERSION = 2
STATUSES = ("active", "completed", "cancelled")
KEYS = (
    "version",
    "id",
    "task",
    "phase",
    "round",
    "status",
    "plan_source_path",
    "owner_session_id",
    "owner_cwd",
    "owner_project_key",
    "created_at",
    "updated_at",
)
OMIT_EMPTY = ("plan_source_path", "owner_session_id", "owner_cwd", "owner_project_key")
DEFAULT_TASK = "plan review"
FILE_MODE = 0o644


@dataclass
class Workflow:
    id: str
    phase: str
    round: int
    status: str
    task: str = DEFAULT_TASK
    plan_source_path: str = ""
    owner_session_id: str = ""
    owner_cwd: str = ""
    owner_project_key: str = ""
    created_at: str = ""
    updated_at: str = ""
    version: int = VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.status == "active"

    def owned_by(self, session_id: str | None) -> bool:
        return bool(session_id) and self.owner_session_id == session_id

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in KEYS:
            value = VERSION if key == "version" else getattr(self, key)
            if key in OMIT_EMPTY and not value:
                continue
            out[key] = value
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


def project_key(cwd: str) -> str:
    """owner_project_key as Claude Code names a project's folder: every character outside
    [A-Za-z0-9] becomes '-', so the key finds the session's transcripts. codex-review v0.7.3
    replaces only '/'; a workflow with either form resolves (docs/review.md, difference 20)."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


def go_json(value: Any) -> str:
    """JSON the way Go's json.MarshalIndent(v, "", "  ") writes it."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def dumps(wf: Workflow) -> str:
    return go_json(wf.as_dict()) + "\n"


def _corrupt(path: Path, why: str) -> StateFileError:
    return StateFileError(
        path,
        why,
        f"repair it, or move the directory {path.parent.name} out of {path.parent.parent}",
        code=ExitCode.USAGE,
        what=f"{path} is not a valid workflow file: {why}",
    )


def parse(text: str, path: Path, expected_id: str) -> Workflow:
    try:
        data = loads_json(text, path)
    except StateFileError as exc:
        raise _corrupt(path, exc.why) from exc
    if not isinstance(data, dict):
        raise _corrupt(path, "the top level is not an object")

    def get(key: str, kind: type, default: Any) -> Any:
        if key not in data:
            return default
        value = data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _corrupt(path, f"{key} must be a {kind.__name__}, not {value!r}")
        return value

    version = get("version", int, VERSION)
    if version > VERSION:
        raise PlanBuildError(
            f"{path} has version {version}; this plan-build understands version {VERSION}",
            "upgrade plan-build (or the tool that wrote it) before acting on this workflow",
            code=ExitCode.USAGE,
        )
    wf_id = get("id", str, "")
    if wf_id != expected_id:
        raise _corrupt(path, f"its id {wf_id!r} does not match its directory {expected_id!r}")
    phase = get("phase", str, "")
    if phase not in PHASES:
        raise _corrupt(path, f"phase {phase!r} is neither plan nor implement")
    status = get("status", str, "")
    if status not in STATUSES:
        raise _corrupt(path, f"status {status!r} is not one of {', '.join(STATUSES)}")
    return Workflow(
        id=wf_id,
        phase=phase,
        round=max(1, get("round", int, 1)),
        status=status,
        task=get("task", str, ""),
        plan_source_path=get("plan_source_path", str, ""),
        owner_session_id=get("owner_session_id", str, ""),
        owner_cwd=get("owner_cwd", str, ""),
        owner_project_key=get("owner_project_key", str, ""),
        created_at=get("created_at", str, ""),
        updated_at=get("updated_at", str, ""),
        version=VERSION,
        extra={k: v for k, v in data.items() if k not in KEYS},
    )


def read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise _corrupt(path, f"it is larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _corrupt(path, f"it cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise StateFileError(
            path,
            f"not UTF-8 text (byte {exc.start})",
            "restore it from a backup or repair it by hand",
            code=ExitCode.USAGE,
            what=f"{path} is not UTF-8 text (byte {exc.start}); it may be half-written",
        ) from exc


def load(wdir: WorkflowDir) -> Workflow:
    guard(wdir)
    return parse(read_text(wdir.workflow_json), wdir.workflow_json, wdir.id)


def exists(wdir: WorkflowDir) -> bool:
    return wdir.workflow_json.is_file()


def save(wdir: WorkflowDir, wf: Workflow, now: _dt.datetime) -> None:
    wf.updated_at = stamp(now)
    guard(wdir)
    wdir.path.mkdir(parents=True, exist_ok=True)
    atomic_write(wdir.workflow_json, dumps(wf), mode=FILE_MODE)


def task_text(given: str) -> str:
    """The task as codex-review records it: each LF becomes a space, the ends are trimmed,
    and everything else (runs of spaces, TABs, a CR inside) is kept as given; control
    characters are escaped only when shown (ui.printable), never in the file."""
    return given.replace("\n", " ").strip()


def create(wdir: WorkflowDir, now: _dt.datetime, task: str, *, phase: str = "plan") -> Workflow:
    text = task_text(task) or DEFAULT_TASK
    when = stamp(now)
    return Workflow(
        id=wdir.id,
        phase=phase,
        round=1,
        status="active",
        task=text,
        created_at=when,
        updated_at=when,
    )


def list_ids(root: Path) -> list[str]:
    """Ids of every directory under the workflows dir that holds a workflow.json, sorted."""
    base = workflows_dir(root)
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if p.is_dir() and (p / "workflow.json").is_file())


__all__ = [
    "DEFAULT_TASK",
    "KEYS",
    "STATUSES",
    "VERSION",
    "Workflow",
    "create",
    "dumps",
    "exists",
    "go_json",
    "list_ids",
    "load",
    "parse",
    "project_key",
    "read_text",
    "save",
    "task_text",
]
