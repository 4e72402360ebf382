"""Which workflow a command acts on.

`--workflow ID` names it explicitly. Otherwise, among the active workflows: with a Claude
session, the one it owns, else the single unowned one (which the session then claims);
without a session, the single active one. Workflows owned by other sessions are invisible,
and more than one candidate is an error naming them all - plan-build never picks one.

Differences from codex-review: an explicit id must exist (codex-review silently creates a
new workflow instead); a workflow whose owning session has ended can be taken over by naming
it with --workflow (codex-review never rebinds an owner); and a workflow whose owner is the
same Claude process (pid and start time, from plan-build-owner.json) under the id it had
before /clear is found and rebound to the new id.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from plan_build.core.claudesessions import ClaudeSession, live_session_ids
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.core.fsutil import atomic_write
from plan_build.review.folders import Skipped, blocked_error, blocking, scan
from plan_build.review.layout import WorkflowDir, check_id, workflows_dir
from plan_build.review.workflowfile import Workflow, exists, list_ids, load, project_key, save


@dataclass
class Resolution:
    workflow: Workflow | None
    wdir: WorkflowDir | None
    session: ClaudeSession | None
    claim: bool = False  # bind the workflow to the session (under the lock)
    note: str | None = None
    orphans: tuple[str, ...] = ()  # active workflows whose owning session has ended
    skipped: tuple[Skipped, ...] = ()  # folders under workflows/ that are not readable workflows


def _ambiguous(kind: str, ids: list[str]) -> PlanBuildError:
    return PlanBuildError(
        f"{kind}: {', '.join(sorted(ids))}",
        "name the one to act on with --workflow ID (or finish the others with review.done)",
        code=ExitCode.USAGE,
    )


def resolve(
    root: Path,
    session: ClaudeSession | None,
    env: Mapping[str, str],
    explicit: str | None = None,
    *,
    acting: bool = False,
) -> Resolution:
    """`acting`: the command would change state or rely on the answer (review, approve,
    commit's gate), so a broken folder that is this session's (or the only kind there is)
    stops it with exit 3 instead of being worked around."""
    if explicit is not None:
        return _explicit(root, session, env, check_id(explicit))
    workflows, skipped = scan(root)
    if acting:
        sid = session.session_id if session else None
        stop = blocking(workflows, skipped, sid)
        if stop:
            raise blocked_error(stop, sid)
    res = _among(root, session, env, [wf for wf in workflows if wf.active])
    res.skipped = tuple(skipped)
    return res


def _among(
    root: Path, session: ClaudeSession | None, env: Mapping[str, str], active: list[Workflow]
) -> Resolution:
    if session is None:
        if len(active) > 1:
            raise _ambiguous("multiple active workflows found", [wf.id for wf in active])
        if active:
            return Resolution(active[0], WorkflowDir(root, active[0].id), None)
        return Resolution(None, None, None)
    owned = [wf for wf in active if wf.owned_by(session.session_id)]
    if len(owned) > 1:
        raise _ambiguous(
            f"Claude session {session.session_id} owns several active workflows",
            [wf.id for wf in owned],
        )
    if owned:
        return Resolution(owned[0], WorkflowDir(root, owned[0].id), session)
    cleared = _cleared(root, active, session, env)
    if len(cleared) > 1:
        raise _ambiguous(
            f"Claude process {session.pid} owned several active workflows before /clear",
            [wf.id for wf in cleared],
        )
    if cleared:
        wf = cleared[0]
        note = (
            f"the Claude session was cleared (/clear): workflow {wf.id} of session "
            f"{wf.owner_session_id} continues in {session.session_id}"
        )
        return Resolution(wf, WorkflowDir(root, wf.id), session, claim=True, note=note)
    unowned = [wf for wf in active if not wf.owner_session_id]
    if len(unowned) > 1:
        raise _ambiguous(
            "several unowned active workflows could be this session's", [wf.id for wf in unowned]
        )
    if unowned:
        wf = unowned[0]
        return Resolution(wf, WorkflowDir(root, wf.id), session, claim=True)
    others = [wf for wf in active if wf.owner_session_id]
    orphans: tuple[str, ...] = ()
    if others:
        live = live_session_ids(env)
        orphans = tuple(wf.id for wf in others if wf.owner_session_id not in live)
    return Resolution(None, None, session, orphans=orphans)


def _explicit(
    root: Path, session: ClaudeSession | None, env: Mapping[str, str], wf_id: str
) -> Resolution:
    wdir = WorkflowDir(root, wf_id)
    if not exists(wdir):
        known = list_ids(root)
        raise usage(
            f"no workflow {wf_id} in {workflows_dir(root)}",
            f"known workflows: {', '.join(known)}"
            if known
            else "start one with: plan-build review.plan",
        )
    wf = load(wdir)
    res = Resolution(wf, wdir, session)
    if not wf.active or session is None:
        return res
    if not wf.owner_session_id:
        res.claim = True
    elif wf.owner_session_id != session.session_id:
        if wf.owner_session_id in live_session_ids(env):
            res.note = (
                f"workflow {wf_id} belongs to running session {wf.owner_session_id}; "
                "acting on it once because --workflow named it"
            )
        else:
            res.claim = True
            res.note = f"taking over workflow {wf_id} from ended session {wf.owner_session_id}"
    return res


def last_completed(root: Path, session: ClaudeSession | None) -> Workflow | None:
    """The most recently finished workflow this session may look at (its own or an unowned
    one; without a session, any): what `review.status` shows until a new workflow starts."""
    done = [wf for wf in scan(root)[0] if wf.status == "completed"]
    if session is not None:
        done = [wf for wf in done if wf.owner_session_id in (session.session_id, "")]
    return max(done, key=lambda wf: (wf.updated_at, wf.id), default=None)


def claim(wdir: WorkflowDir, session: ClaudeSession, now: _dt.datetime) -> Workflow:
    """Bind the workflow to the session (re-read first, under the caller's lock)."""
    wf = load(wdir)
    wf.owner_session_id = session.session_id
    wf.owner_cwd = session.cwd
    wf.owner_project_key = project_key(session.cwd) if session.cwd else ""
    save(wdir, wf, now)
    record_owner(wdir, session)
    return wf


def record_owner(wdir: WorkflowDir, session: ClaudeSession) -> None:
    """Note which Claude process owns the workflow: after /clear the same process (pid and
    start time) runs under a new session id, and only this note can tell."""
    data = {"session_id": session.session_id, "pid": session.pid, "proc_start": session.proc_start}
    atomic_write(wdir.owner_process, json.dumps(data) + "\n", mode=0o644)


def _owner_process(wdir: WorkflowDir) -> dict[str, object] | None:
    try:
        data = json.loads(wdir.owner_process.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _cleared(
    root: Path, active: list[Workflow], session: ClaudeSession, env: Mapping[str, str]
) -> list[Workflow]:
    """Active workflows of an earlier id of this very Claude process: same pid and same start
    time on record, and that earlier id no longer live. Anything less certain is no match."""
    if session.proc_start is None:
        return []
    found = []
    for wf in active:
        if not wf.owner_session_id or wf.owner_session_id == session.session_id:
            continue
        note = _owner_process(WorkflowDir(root, wf.id))
        if (
            note is not None
            and note.get("session_id") == wf.owner_session_id
            and note.get("pid") == session.pid
            and note.get("proc_start") == session.proc_start
        ):
            found.append(wf)
    if found:
        live = live_session_ids(env)
        found = [wf for wf in found if wf.owner_session_id not in live]
    return found


__all__ = ["Resolution", "claim", "last_completed", "record_owner", "resolve"]
