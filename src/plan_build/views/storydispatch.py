"""The dispatches of a session (by its id, else by its time), read from the telemetry log and
the evidence blocks.

Each `attempt` record of the log is one Codex run (the first, or a correction) with its checks,
file counts and tokens; each `dispatch` record is how the dispatch ended. The task's title,
scope and evidence block come from the TASKS.md that holds that dispatch's block: today's, or
an archived one once `architect --new` moved it into `docs/archive/<stamp>/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core import codexusage
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.views import story as st


def within(at: str | None, start: str, end: str | None) -> bool:
    """`at` falls in the session's time (from its baseline to its commit, or now)."""
    return isinstance(at, str) and at >= start and (end is None or at <= end)


def _began(end: str, seconds: float | None) -> str:
    """When something that ended at `end` and took `seconds` began (records stamp the end)."""
    import datetime as dt

    from plan_build.core import clock

    moment = clock.parse(end)
    if moment is None or not seconds:
        return end
    return clock.stamp(moment - dt.timedelta(seconds=seconds))


def _task_files(root: Path) -> list[tuple[Path, bool]]:
    """TASKS.md now, then the archived ones, newest first (True: archived)."""
    found = [(root / "TASKS.md", False)]
    archive = root / "docs" / "archive"
    if archive.is_dir():
        found += [(p, True) for p in sorted(archive.glob("*/TASKS.md"), reverse=True)]
    return [(p, a) for p, a in found if p.is_file()]


def _task_text(
    root: Path, task_id: str, dispatch: str
) -> tuple[str, tuple[str, ...], str | None, bool]:
    """(title, scope, evidence block, archived) of a dispatched task, from the TASKS.md that
    holds that dispatch's block; ("", (), None, False) when none does."""
    from plan_build.dispatch import taskfile

    for path, archived in _task_files(root):
        try:
            tf = taskfile.read(path)
        except PlanBuildError:
            continue
        task = tf.get(task_id)
        if task is None:
            continue
        lines = tf.text.split("\n")
        for block in task.blocks:
            if block.id == dispatch:
                text = "\n".join(lines[block.start - 1 : block.end])
                return task.title, task.scope, text, archived
        if not archived:
            fallback = (task.title, task.scope, None, False)
            return fallback
    return "", (), None, False


def _attempt(rec: Mapping[str, Any]) -> st.AttemptStory:
    from plan_build.dispatch import telemetry

    ver = rec.get("verification")
    checks = tuple(
        st.CheckRow(
            str(c.get("program")),
            c.get("exit") == 0 and not c.get("timed_out"),
            c.get("exit") if isinstance(c.get("exit"), int) else None,
            c.get("seconds") if isinstance(c.get("seconds"), int | float) else None,
        )
        for c in (ver.get("commands") or [] if isinstance(ver, dict) else [])
        if isinstance(c, dict)
    )
    codex = rec.get("codex") if isinstance(rec.get("codex"), dict) else {}
    secs = codex.get("seconds") if isinstance(codex, dict) else None
    return st.AttemptStory(
        int(rec.get("attempt") or 0),
        str(rec.get("role") or st.UNKNOWN),
        str(rec.get("at") or ""),
        secs if isinstance(secs, int | float) else None,
        str(rec.get("outcome") or st.UNKNOWN),
        rec.get("changed_files") if isinstance(rec.get("changed_files"), int) else None,
        rec.get("outside_scope") if isinstance(rec.get("outside_scope"), int) else None,
        checks,
        telemetry.usage_of(rec),
    )


def dispatches(
    repo: Repo, session_id: str, start: str, end: str | None
) -> tuple[list[st.TaskStory], list[st.Event], dict[str, Any], list[str], bool]:
    """The session's dispatches: in its time, and not tagged with another session (the log
    is shared by every worktree of the repository, and two sessions may overlap in time)."""
    from plan_build.dispatch import telemetry

    records, _bad = telemetry.read(repo.state_dir)
    mine = [
        r
        for r in records
        if within(r.get("at"), start, end) and r.get("session") in (None, session_id)
    ]
    attempts: dict[str, list[dict[str, Any]]] = {}
    ends: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for r in mine:
        did = str(r.get("dispatch"))
        if did not in order:
            order.append(did)
        if r.get("kind") == "attempt":
            attempts.setdefault(did, []).append(r)
        elif r.get("kind") == "dispatch":
            ends[did] = r
    tasks: list[st.TaskStory] = []
    events: list[st.Event] = []
    by_role: dict[str, list[codexusage.Usage]] = {}
    recipes: list[str] = []
    archived = False
    for did in order:
        runs = [_attempt(a) for a in attempts.get(did, [])]
        first = (attempts.get(did) or [ends.get(did, {})])[0]
        task_id = str(first.get("task"))
        title, scope, evidence, was_archived = _task_text(repo.root, task_id, did)
        archived = archived or was_archived
        end_rec = ends.get(did, {})
        fp = (first.get("recipe") or {}).get("fingerprint")
        if isinstance(fp, str) and fp not in recipes:
            recipes.append(fp)
        tasks.append(
            st.TaskStory(
                task_id,
                title,
                tuple(scope),
                did,
                end_rec.get("outcome"),
                end_rec.get("reason"),
                tuple(runs),
                evidence,
            )
        )
        for a in runs:
            by_role.setdefault(a.role, []).append(a.usage)
            kind = "dispatch" if a.number <= 1 else "correction"
            label = f"{task_id} attempt {a.number} ({a.role}): {a.outcome}"
            events.append(st.Event(kind, label, _began(a.at, a.seconds), a.seconds))
    tokens = {role: codexusage.summed(values) for role, values in sorted(by_role.items())}
    return tasks, events, tokens, recipes, archived


__all__ = ["dispatches", "within"]
