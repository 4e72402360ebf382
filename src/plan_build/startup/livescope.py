"""Live scope in architect mode: Claude hears at once when it writes outside the current task.

Claude Code runs this through the PostToolUse hook on its file tools (startup/gatehook.py,
`post-edit`). The write has happened; the answer is Claude's documented way to feed a message
back (`decision: "block"` with a reason, which Claude shows the model, and the same text as
`additionalContext`). Allowed without a word: the architect records (SPEC.md, TASKS.md, ADR.md,
CHANGELOG.md, the archive) and the scope of every task that is In Progress, matched by the
same rules dispatch checks Codex's attempts with (dispatch/scope.py). Anything else joins the
session's intended change, which `verify` and `commit` would take, without a task behind it.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plan_build.dispatch.scope import Scope

# architectrecords.RECORDS and its archive folder (a test keeps them equal): importing that
# module would cost every hook call ~10 ms of datetime and shutil
RECORDS = ("SPEC.md", "TASKS.md", "ADR.md", "CHANGELOG.md")
RECORD_DIRS = ("docs/archive/",)


def after_write(path: str | None, cwd: str | None, opts: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) for the hook: 0 and nothing when the write is in scope."""
    if opts.get("mode") != "architect" or path is None:
        return 0, "", ""
    root = os.path.realpath(os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd())
    full = os.path.realpath(os.path.join(cwd or root, path))
    rel = os.path.relpath(full, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        return tell(f"{path} is outside the repository ({root}); plan-build's session is there")
    rel = rel.replace(os.sep, "/")
    if rel in RECORDS or rel.startswith(RECORD_DIRS):
        return 0, "", ""
    tasks, problem = in_progress(root)
    if problem is not None:
        return tell(f"{rel} was written, and plan-build could not check its scope: {problem}")
    if any(scope.allows(rel) for _, scope in tasks):
        return 0, "", ""
    if not tasks:
        where = "no task in TASKS.md is In Progress"
    else:
        where = "it is outside the scope of " + ", ".join(t for t, _ in tasks)
    return tell(
        f"{rel} is outside the current task's scope ({where}), so it joins the session's "
        "intended change without a task: verify and commit would take it. In architect mode "
        "code changes go through `plan-build dispatch TASK-…` (Codex); revert this write, or "
        "add the path to the scope of the task it belongs to."
    )


def in_progress(root: str) -> tuple[list[tuple[str, Scope]], str | None]:
    """(task id, Scope) for every In Progress task, or the reason TASKS.md cannot say."""
    from pathlib import Path

    from plan_build.dispatch import taskfile
    from plan_build.dispatch.scope import Scope
    from plan_build.dispatch.taskmodel import FILENAME, IN_PROGRESS
    from plan_build.errors import PlanBuildError

    try:
        parsed = taskfile.read(Path(root) / FILENAME)
    except PlanBuildError as exc:
        return [], exc.what
    return [(t.id, Scope(t.scope)) for t in parsed.tasks if t.status == IN_PROGRESS], None


def tell(message: str) -> tuple[int, str, str]:
    text = f"plan-build (live scope): {message}"
    answer = {
        "decision": "block",
        "reason": text,
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text},
    }
    return 0, json.dumps(answer), ""
