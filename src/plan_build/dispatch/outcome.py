"""How a dispatch ends: Review or Blocked with its evidence, In Progress after an interruption
(with how to resume), or Blocked when plan-build itself failed. Each writes TASKS.md, the task
state and the log; the endings after a stop never raise (the stop must go on)."""

from __future__ import annotations

import contextlib
import time

from plan_build.core import interrupts, redact
from plan_build.core.errors import PlanBuildError
from plan_build.core.render import fence
from plan_build.dispatch import attempt as codex
from plan_build.dispatch import report, taskfile, taskstate
from plan_build.dispatch.evidence import (
    evidence_text,
    failed_block,
    final_block,
    interrupted_block,
)
from plan_build.dispatch.inflight import InFlight
from plan_build.dispatch.results import DispatchResult
from plan_build.dispatch.scope import Scope
from plan_build.dispatch.taskmodel import BLOCKED, IN_PROGRESS, Task


def finish(d: InFlight, task: Task, status: str, reason: str, baseline: str) -> DispatchResult:
    """Review or Blocked: the evidence (also in the run dir), TASKS.md, the task state, the log
    and the console."""
    changed = codex.dispatch_changes(d.repo, baseline, d.attempts, d.byproducts)
    block = final_block(
        d.header,
        task_id=task.id,
        status=status,
        reason=reason,
        attempts=d.attempts,
        max_attempts=d.max_attempts,
        changed=changed,
        seconds=time.monotonic() - d.started,
        env=d.env,
    )
    d.run_dir.mkdir(parents=True, exist_ok=True)
    block = evidence_text(block, d.repo.root, d.session.home)
    (d.run_dir / "evidence.md").write_text(block, encoding="utf-8")
    digest = None
    try:
        d.update(status, block)
        fresh = taskfile.read(d.path)
        fresh_task = fresh.get(task.id)
        digest = fresh.content_digest(fresh_task) if fresh_task else None
    except PlanBuildError as exc:
        d.console.say(
            f"plan-build: warning: could not record the outcome in {taskfile.FILENAME} "
            f"({exc.what}); the evidence is in {d.run_dir / 'evidence.md'}"
        )
    last = {"dispatch": d.dispatch_id, "status": status, "reason": reason}
    # the dispatch's tokens go with its outcome: what `status` shows for the task
    taskstate.record_end(
        d.plan_home, task.id, {**last, "digest": digest, "usage_sum": d.usage_sum()}
    )
    d.log(d.dispatch_record(task, status, reason))
    report.say_outcome(d.console, task, status, reason, d.attempts)
    return d.result(status, reason, changed)


def interrupted(d: InFlight, task: Task, exc: BaseException) -> None:
    """Ctrl-C, a termination signal or an error mid-dispatch: keep In Progress, say how to
    resume."""
    if isinstance(exc, KeyboardInterrupt):
        what = interrupts.signal_name(exc)
    elif d.stopped_by is not None:
        what = d.stopped_by
    else:
        what = f"an error ({exc})"
    in_codex = d.phase.endswith("(codex)")
    stopped = (
        "Codex and its processes were stopped" if in_codex else "the running command was stopped"
    )
    outside: list[str] = []
    if d.before is not None and in_codex:
        outside = codex.outside_at_stop(
            d.repo,
            Scope(task.scope, d.repo.names),
            d.before,
            byproducts=d.byproducts,
            guard=d.guard,
        )
    block = interrupted_block(
        d.header,
        task.id,
        what=what,
        phase=d.phase,
        stopped=stopped,
        attempts=d.attempts[:-1],
        outside=outside,
        env=d.env,
    )
    with contextlib.suppress(Exception):
        d.update(None, block)
    with contextlib.suppress(Exception):
        record = d.dispatch_record(task, IN_PROGRESS, "interrupted")
        record["outside_scope"] = len(outside)
        d.log(record)


def failed(d: InFlight, task: Task, exc: PlanBuildError) -> None:
    """plan-build itself failed mid-dispatch: the task becomes Blocked (reason `error`)
    with the message, so it is never left In Progress by a failure that repeats."""
    block = failed_block(
        d.header,
        task.id,
        phase=d.phase,
        what=evidence_text(exc.what, d.repo.root, d.session.home),
        attempts=d.attempts,
        env=d.env,
    )
    with contextlib.suppress(Exception):
        d.update(BLOCKED, block)
    with contextlib.suppress(Exception):
        last = {
            "dispatch": d.dispatch_id,
            "status": BLOCKED,
            "reason": "error",
            "usage_sum": d.usage_sum(),
        }
        taskstate.record_end(d.plan_home, task.id, last)
    with contextlib.suppress(Exception):
        d.log(d.dispatch_record(task, BLOCKED, "error"))


def setup_failed(d: InFlight, task: Task, why: str, output: str, log: str) -> DispatchResult:
    """A wave's worktree setup command failed before any Codex run: Blocked `setup_failed`,
    the output's last lines in the evidence, the whole output in `log` (as shown: relative
    to the user's work tree)."""
    block = final_block(
        d.header,
        task_id=task.id,
        status=BLOCKED,
        reason="setup_failed",
        attempts=[],
        max_attempts=d.max_attempts,
        changed=[],
        seconds=time.monotonic() - d.started,
        env=d.env,
    )
    shown = redact.redact(output.strip() or "(no output)", d.env)[0]
    detail = [f"- {why}; its output (last lines; all of it in `{log}`):"]
    detail += ["    " + ln for ln in fence(shown).splitlines()]
    head, _, rest = block.partition("\n- Next:")
    block = head + "\n" + "\n".join(detail) + "\n- Next:" + rest
    block = evidence_text(block, d.repo.root, d.session.home)
    with contextlib.suppress(PlanBuildError, OSError):
        d.run_dir.mkdir(parents=True, exist_ok=True)
        (d.run_dir / "evidence.md").write_text(block, encoding="utf-8")
    with contextlib.suppress(PlanBuildError):
        d.update(BLOCKED, block)
    tail_line = " · ".join(ln.strip() for ln in shown.splitlines()[-3:] if ln.strip())
    last = {
        "dispatch": d.dispatch_id,
        "status": BLOCKED,
        "reason": "setup_failed",
        "detail": f"{why}: {tail_line}"[:400],
    }
    with contextlib.suppress(PlanBuildError, OSError):
        taskstate.record_end(d.plan_home, task.id, last)
    with contextlib.suppress(Exception):
        d.log(d.dispatch_record(task, BLOCKED, "setup_failed"))
    return d.result(BLOCKED, "setup_failed", [])
