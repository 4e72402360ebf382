"""Per-task dispatch state: how the task's last dispatch ended, and the running one's resume data.

One JSON file per task under the repository's state dir (shared by worktrees). `last` says how
the last dispatch ended (its reason and the task text's digest, so a Blocked task is not
redispatched unchanged); `running` is what a dispatch that dies (SIGKILL, power loss) leaves
for the rerun that resumes it: its id, baseline tree, Codex runs used and the snapshot taken
before its last Codex run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core import clock, snapshot
from plan_build.core.fsutil import StateFileError, read_json, write_json
from plan_build.core.gitrepo import Repo
from plan_build.dispatch.taskmodel import IN_PROGRESS, Task

MAX_SAVED_IGNORED = 5_000  # individually ignored files saved for a resume; more are not


def path(repo: Repo, task_id: str) -> Path:
    """The main work tree's tasks keep `tasks/ID.json`; a linked worktree has its own TASKS.md,
    so its tasks live apart (`tasks/wt-NAME/`, NAME its directory under .git/worktrees):
    two worktrees' TASK-002 are two tasks (docs/adr/0181)."""
    base = repo.state_dir / "dispatch" / "tasks"
    if repo.git_dir.resolve() != repo.common_dir.resolve():
        base = base / f"wt-{repo.git_dir.name}"
    return base / f"{task_id}.json"


def read(repo: Repo, task_id: str) -> dict[str, Any]:
    """The task's dispatch state ({} before its first dispatch)."""
    where = path(repo, task_id)
    fix = f"delete it to forget task {task_id}'s earlier dispatches, then dispatch again"
    try:
        data = read_json(where, fix)
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict):
        raise StateFileError(where, "it is not a task state (not a JSON object)", fix)
    return data


def write(repo: Repo, task_id: str, data: Mapping[str, Any]) -> None:
    write_json(path(repo, task_id), data, sort_keys=True)


def last(repo: Repo, task_id: str) -> dict[str, Any]:
    """How the task's last dispatch ended ({} when none has)."""
    value = read(repo, task_id).get("last")
    return value if isinstance(value, dict) else {}


def record_end(repo: Repo, task_id: str, fields: Mapping[str, Any]) -> None:
    """The dispatch ended: its outcome replaces the whole state (nothing is left to resume)."""
    write(repo, task_id, {"last": {**fields, "at": clock.stamp()}})


def start_running(repo: Repo, task_id: str, dispatch_id: str, baseline: str, started: str) -> None:
    state = read(repo, task_id)
    state["running"] = {
        "dispatch": dispatch_id,
        "pid": os.getpid(),
        "baseline_tree": baseline,
        "started": started,
        "attempts": 0,
    }
    write(repo, task_id, state)


def save_running(repo: Repo, task_id: str, **fields: Any) -> None:
    state = read(repo, task_id)
    running = state.get("running")
    if not isinstance(running, dict):
        running = {}
    write(repo, task_id, {**state, "running": {**running, **fields}})


def ignored_for_resume(ignored: snapshot.Ignored) -> dict[str, object] | None:
    """The ignored-files snapshot as saved for a resume; None when it is too large to keep."""
    return ignored.as_json() if len(ignored.files) <= MAX_SAVED_IGNORED else None


def resumable(repo: Repo, task: Task) -> dict[str, Any] | None:
    """The saved state of this task's dispatch that died (SIGKILL, power loss) or was
    interrupted, when the task is still In Progress: the rerun continues it."""
    if task.status != IN_PROGRESS:
        return None
    running = read(repo, task.id).get("running")
    if not isinstance(running, dict) or not isinstance(running.get("baseline_tree"), str):
        return None
    trees = [running["baseline_tree"]]
    before = running.get("before")
    if isinstance(before, list) and len(before) == 3:
        trees.append(str(before[0]))
    for tree in trees:
        if not repo.git("cat-file", "-e", f"{tree}^{{tree}}", check=False).ok:
            return None
    return running
