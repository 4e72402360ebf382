"""Every folder under workflows/, read once: a workflow plan-build can act on, or a broken one
with the reason and the one fix that mends it.

A broken folder never stops the others (codex-review skips such folders too), but it is
never silently ignored either: every command warns once, naming the file and the fix, and
the commands that would act on it (`blocking`) stop instead of working beside it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import StateFileError, loads_json
from plan_build.core.ui import printable
from plan_build.review.layout import PHASES, WorkflowDir, check_id, guard, workflows_dir
from plan_build.review.workflowfile import VERSION, Workflow, list_ids, parse, read_text

_OWNER = re.compile(r'"owner_session_id"\s*:\s*"([A-Za-z0-9._-]{1,128})"')


@dataclass(frozen=True)
class Skipped:
    """A folder under workflows/ whose workflow.json plan-build cannot read."""

    id: str
    path: Path  # its workflow.json
    why: str
    fix: str
    owner: str = ""  # the Claude session that owned it, when that can still be told

    def warning(self) -> str:
        return (
            f"skipped workflow folder {printable(self.id)}: {printable(self.why)}\n"
            f"  file: {printable(str(self.path))}\n  fix: {printable(self.fix)}"
        )


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def _move_aside(wdir: WorkflowDir) -> str:
    aside = wdir.root / ".claude" / "codex-review" / "broken-workflows"
    return f"mkdir -p {_q(aside)} && mv {_q(wdir.path)} {_q(aside / wdir.id)}"


def _fix(wdir: WorkflowDir, data: object) -> str:
    """What mends this folder, judged from what its workflow.json holds."""
    path = wdir.workflow_json
    aside = f"move the folder aside: {_move_aside(wdir)}"
    if not isinstance(data, dict):
        return f"restore {path} from a backup, or {aside}"
    version = data.get("version", VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        return (
            f"this plan-build reads workflow.json version {VERSION} only: finish workflow "
            f"{wdir.id} with the tool that wrote version {version} (or upgrade plan-build), "
            f"or {aside}"
        )
    wf_id = data.get("id")
    if isinstance(wf_id, str) and wf_id != wdir.id:
        target = workflows_dir(wdir.root) / wf_id
        try:
            check_id(wf_id)
            free = not target.exists()
        except PlanBuildError:
            free = False
        if free:
            return (
                f"if this is workflow {wf_id}, move it to its own name: mv {_q(wdir.path)} "
                f'{_q(target)}; if it is a copy meant as {wdir.id}, set "id" to "{wdir.id}" '
                f"in {path}"
            )
        return f'set "id" to "{wdir.id}" in {path}, or {aside}'
    phase = data.get("phase")
    if phase not in PHASES:
        return f'set "phase" in {path} to one of: {", ".join(PHASES)}; or {aside}'
    return f"repair {path} (the field named above), or {aside}"


def _owner(wdir: WorkflowDir, text: str) -> str:
    """Whose workflow this was: the owner note plan-build writes beside it, else the
    owner_session_id still legible in the broken file."""
    try:
        note = json.loads(wdir.owner_process.read_text(encoding="utf-8"))
        if isinstance(note, dict) and isinstance(note.get("session_id"), str):
            return str(note["session_id"])
    except (OSError, ValueError):
        pass
    found = _OWNER.search(text[:1_000_000])
    return found.group(1) if found else ""


def _why(exc: PlanBuildError) -> str:
    if isinstance(exc, StateFileError):
        return exc.why
    return exc.what


def classify(root: Path, wf_id: str) -> Workflow | Skipped:
    """One folder: its workflow, or why it is broken and how to mend it."""
    wdir = WorkflowDir(root, wf_id)
    path = wdir.workflow_json
    text = ""
    try:
        guard(wdir)
    except PlanBuildError as exc:  # a link out of the repository: never read through it
        return Skipped(wf_id, path, _why(exc), exc.fix or _fix(wdir, None))
    try:
        text = read_text(path)
        if not text.strip():
            return Skipped(wf_id, path, "it is empty", _fix(wdir, None), _owner(wdir, text))
        return parse(text, path, wf_id)
    except PlanBuildError as exc:
        data: object = None
        if text:
            try:
                data = loads_json(text, path)
            except PlanBuildError:
                data = None
        return Skipped(wf_id, path, _why(exc), _fix(wdir, data), _owner(wdir, text))
    except (OSError, RecursionError, ValueError) as exc:
        why = f"unreadable workflow.json ({type(exc).__name__})"
        return Skipped(wf_id, path, why, _fix(wdir, None), _owner(wdir, text))


def scan(root: Path) -> tuple[list[Workflow], list[Skipped]]:
    """Every readable workflow, and every folder skipped with its reason and fix."""
    found: list[Workflow] = []
    skipped: list[Skipped] = []
    for wf_id in list_ids(root):
        item = classify(root, wf_id)
        (found if isinstance(item, Workflow) else skipped).append(item)  # type: ignore[arg-type]
    return found, skipped


def load_all(root: Path) -> list[Workflow]:
    return scan(root)[0]


def blocking(
    workflows: Sequence[Workflow], skipped: Sequence[Skipped], session_id: str | None
) -> list[Skipped]:
    """The broken folders a command that acts must not work around: the one this Claude
    session owns, or every one when no workflow folder at all is readable (working beside
    it would start a second workflow, or count the change as never reviewed). A broken copy
    of a workflow the session still has readable is not its workflow: that one is."""
    if session_id and not any(wf.active and wf.owned_by(session_id) for wf in workflows):
        owned = [s for s in skipped if s.owner == session_id]
        if owned:
            return owned
    if not workflows:
        return list(skipped)
    return []


def blocked_error(found: Sequence[Skipped], session_id: str | None) -> PlanBuildError:
    first = found[0]
    whose = (
        f"it belongs to Claude session {printable(session_id)}"
        if session_id and first.owner == session_id
        else "no workflow folder is readable"
    )
    more = f" (and {len(found) - 1} more broken folder(s))" if len(found) > 1 else ""
    return PlanBuildError(
        f"workflow folder {printable(first.id)} is broken: {printable(str(first.path))}: "
        f"{printable(first.why)}; {whose}{more}, so plan-build will not act beside it",
        f"{printable(first.fix)}; then run the command again",
        code=ExitCode.PREFLIGHT,
    )


__all__ = ["Skipped", "blocked_error", "blocking", "classify", "load_all", "scan"]
