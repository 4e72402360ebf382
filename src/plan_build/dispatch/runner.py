"""`dispatch TASK-ID`: one approved TASKS.md task through Codex, checked mechanically.

The loop (docs/dispatch.md, docs/adr/0062):
  checks (task lints, dependencies Complete, no other task In Progress, recipe pinned, codex
  on PATH) → Status: In Progress → for each attempt: snapshot the work tree, run
  `codex exec --sandbox workspace-write --json -o FILE <prompt>` (stdin closed, timeout), snapshot
  again; every changed path must be inside the task's scope, HEAD and the index must not move;
  then the task's verification commands. A failed verification earns a correction only while a
  verification after it is still possible (at most `max_corrections`). The task ends in Review
  (verified) or Blocked (with the reason), with evidence written into the task either way.

This module is the coordinator: the checks before (`preconditions`, `memscope`), the prompts
(`prompts`), one Codex run and what it changed (`attempt`), the checks after (`verification`),
the dispatch's state and records (`inflight`, `taskstate`), how it ends (`outcome`, `evidence`)
and what it says (`report`) each have their own module.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from plan_build.core import interrupts, proc, snapshot
from plan_build.core.context import Session
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.dispatch import attempt as codex
from plan_build.dispatch import (
    memscope,
    outcome,
    preconditions,
    prompts,
    report,
    taskstate,
)
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch.evidence import running_block
from plan_build.dispatch.inflight import InFlight
from plan_build.dispatch.lock import DispatchLock as Lock
from plan_build.dispatch.results import Attempt, DispatchResult, VerifyRun
from plan_build.dispatch.scope import Scope
from plan_build.dispatch.taskmodel import BLOCKED, IN_PROGRESS, PENDING, REVIEW, Task, TaskFile
from plan_build.dispatch.verification import verify

NO_CHANGE_LIMIT = 2  # attempts in a row that change nothing while verification fails

# ----------------------------------------------------------------------------- small helpers


def repo_files(repo: Repo) -> list[str]:
    """Tracked and untracked (not ignored) files, for spotting scope entries that match nothing."""
    out = repo.git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    return [p for p in out.split("\0") if p]


def tasks_saved(run_dir: Path, number: int) -> Path:
    """Where TASKS.md's bytes from before Codex run `number` are kept, for a resume."""
    return run_dir / f"attempt-{number}.TASKS.md"


# ----------------------------------------------------------------------------- the step


class Dispatcher:
    """Runs the loop; the state it shares with the endings in `outcome` is its `flight`."""

    def __init__(
        self,
        session: Session,
        task_id: str,
        recipe: recipes.Recipe,
        *,
        accept_recipe: bool = False,
        dry_run: bool = False,
        on_interrupt: Callable[[DispatchResult], None] | None = None,
        plan_repo: Repo | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.flight = InFlight(
            session,
            task_id,
            recipe,
            plan_repo=plan_repo,
            cancel=cancel,
            quiet_heartbeat=plan_repo is not None,
        )
        self.accept_recipe = accept_recipe
        self.dry_run = dry_run
        self.on_interrupt = on_interrupt
        self.lock: Lock | None = None
        self.on_group: Callable[[int], None] | None = None  # a wave records the group itself
        # a wave's worktree: folders linked to the user's (their writes are checked there),
        # and paths the verification needs that the worktree lacks (ADR 0196)
        self.linked: tuple[str, ...] = ()
        self.env_gaps: list[str] = []

    def _started(self, pgid: int) -> None:
        if self.lock is not None:
            self.lock.record_group(pgid)
        if self.on_group is not None:
            self.on_group(pgid)

    def _verify(self, task: Task) -> list[VerifyRun]:
        d = self.flight

        def phase(text: str) -> None:
            d.phase = f"verification ({text})"

        return verify(
            task,
            root=d.repo.root,
            env=d.env,
            limit=d.recipe.limits.verification_timeout_seconds,
            console=d.console,
            heartbeat=d.heartbeat,
            on_start=self._started,
            on_command=phase,
            cancel=d.cancel,
        )

    def _check_tree(
        self,
        a: Attempt,
        scope: Scope,
        before: codex.Before,
        ignored: snapshot.Ignored | None,
    ) -> None:
        d = self.flight
        d.phase = f"attempt {a.number} (scope check)"
        codex.check_tree(
            d.repo,
            a,
            scope,
            before,
            ignored,
            byproducts=d.byproducts,
            guard=d.guard,
        )
        if d.plan_repo is not None:  # a wave: the shared refs, writes through links
            from plan_build.dispatch.worktreeprep import check_wave_attempt

            check_wave_attempt(d, a, scope, self.linked, ignored)
        report.say_attempt(d.console, a)

    # -- the run --------------------------------------------------------------------

    def prepare(self, alongside: frozenset[str] = frozenset()) -> tuple[TaskFile, Task, str]:
        """The checks before anything changes, and the rendered prompt. `alongside` names the
        tasks of the same wave, which may be In Progress beside this one."""
        d = self.flight
        d.alongside = alongside - {d.task_id}
        tf, task = preconditions.load(d.path, d.task_id)
        preconditions.check(d.plan_home, tf, task, alongside=alongside)
        if proc.which("codex", d.env) is None:
            raise proc.CommandNotFound("codex")
        d.mode = memscope.memory_mode(d.env)
        d.codex_env = memscope.codex_env(d.repo.root, d.env, d.mode)
        if not self.dry_run:
            recipes.check_pinned(
                d.repo.state_dir,
                d.recipe,
                accept=self.accept_recipe,
                task_id=task.id,
            )
        if d.mode == "required":
            d.slot = memscope.checkpoint(d.repo.root, d.env, d.session.home)
            if d.slot.state == "unavailable":
                d.console.say(
                    f"plan-build: warning: the workflow_status checkpoint is unavailable "
                    f"({d.slot.reason}); the prompt says so"
                )
        context = d.context(tf, task)
        return tf, task, d.render("codex/task.md.j2", context, refuse=True)

    def run(self) -> DispatchResult:
        d = self.flight
        tf, task, prompt = self.prepare()
        if self.dry_run:
            out = d.run_dir / "attempt-1.last-message.md"
            argv = prompts.codex_argv(d.recipe, recipes.IMPLEMENTER, out, "<prompt>")
            report.write_dry_run(d.session.stdout.write, argv, prompt, task)
            status = task.status or PENDING
            return DispatchResult(
                task.id,
                d.dispatch_id,
                status,
                "dry_run",
                [],
                [],
                0.0,
                d.described,
                True,
            )

        lock = Lock(d.repo.state_dir / "dispatch" / "lock", task.id)
        stopped = lock.acquire()
        self.lock = lock
        report.say_stopped(d.console, stopped)
        try:
            with interrupts.stopping():
                return self.loop(tf, task, prompt)
        finally:
            lock.release()

    def _begin(self, task: Task) -> tuple[Scope, str]:
        """Resume or start: the messages, Status In Progress, the saved running state."""
        d = self.flight
        scope = Scope(task.scope, d.repo.names)
        d.byproducts = preconditions.byproducts(d.session.config, d.repo.names)
        d.resumed = taskstate.resumable(d.plan_home, task)
        if d.resumed is not None:
            # the same dispatch goes on: its id, its baseline, its budget of Codex runs
            d.dispatch_id = str(d.resumed.get("dispatch") or d.dispatch_id)
            d.run_dir = d.repo.state_dir / "dispatch" / "runs" / d.dispatch_id
            d.started_at = str(d.resumed.get("started") or d.started_at)
            used = d.resumed.get("attempts")
            d.used = used if isinstance(used, int) and used >= 0 else 0
        report.say_start(
            d.console,
            task,
            d.header,
            resumed=d.resumed is not None,
            used=d.used,
            max_attempts=d.max_attempts,
            unmatched=scope.unmatched(repo_files(d.repo)),
        )
        # the baseline comes before the status changes: if the snapshot fails, nothing did
        baseline = str(d.resumed["baseline_tree"]) if d.resumed else codex.tree(d.repo)
        d.baseline = baseline
        d.update(
            IN_PROGRESS,
            running_block(d.header, task.id, d.used + 1, recipes.IMPLEMENTER, os.getpid()),
        )
        if d.resumed is not None:
            taskstate.save_running(d.plan_home, d.task_id, pid=os.getpid())
        else:
            taskstate.start_running(d.plan_home, task.id, d.dispatch_id, baseline, d.started_at)
        return scope, baseline

    def loop(self, tf: TaskFile, task: Task, prompt: str) -> DispatchResult:
        """From Status In Progress to the outcome (the caller holds the lock)."""
        scope, baseline = self._begin(task)
        status, reason = BLOCKED, "interrupted"
        try:
            status, reason = self._attempts(tf, task, scope, prompt)
            if status == BLOCKED and reason in ("corrections_exhausted", "no_change"):
                reason = self._environment(reason)
        except PlanBuildError as exc:
            if isinstance(exc, proc.CommandCancelled):
                outcome.interrupted(self.flight, task, exc)
            else:  # a failed snapshot, an unwritable state dir: never leave it In Progress
                outcome.failed(self.flight, task, exc)
            raise
        except BaseException as exc:
            outcome.interrupted(self.flight, task, exc)
            if self.on_interrupt is not None and isinstance(exc, KeyboardInterrupt):
                with contextlib.suppress(Exception):
                    self.on_interrupt(self.flight.result(IN_PROGRESS, "interrupted", []))
            raise
        return outcome.finish(self.flight, task, status, reason, baseline)

    def _environment(self, reason: str) -> str:
        """A verification that failed for want of what git ignores in the user's tree (a wave's
        worktree lacks it) is the environment's failure, not the task's."""
        from plan_build.dispatch.worktreeprep import environment_note

        d = self.flight
        note = environment_note(d.repo.root, self.env_gaps)
        if note is None or not d.attempts:
            return reason
        d.attempts[-1].notes.append(note)
        return "environment"

    def _dead_attempt(self, task: Task, scope: Scope) -> tuple[str, str] | None:
        """A resumed dispatch first checks what happened since the dead run's last Codex run
        began (its changes, and anything a survivor wrote), against that run's snapshot."""
        d = self.flight
        running = d.resumed or {}
        before = running.get("before")
        if not (isinstance(before, list) and len(before) == 3) or d.used < 1:
            return None
        role = str(running.get("role") or recipes.IMPLEMENTER)
        r = d.recipe.role(role)
        dead = Attempt(d.used, role, r.model, r.reasoning)
        dead.events = codex.events_of(d.run_dir, d.used)  # what it printed before it died
        dead.notes.append(
            f"the dispatch running this attempt stopped (pid {running.get('pid', '?')}); "
            "its changes were checked when the dispatch resumed"
        )
        d.attempts.append(dead)
        ignored = snapshot.Ignored.from_json(running.get("ignored"))
        d.guard.resume(tasks_saved(d.run_dir, d.used), d.task_id, d.dispatch_id)
        self._check_tree(dead, scope, (str(before[0]), before[1], str(before[2])), ignored)
        d.guard.disarm()
        stop = "scope" if dead.outside else "git_state" if dead.git_moves else None
        if stop is None and d.used >= d.max_attempts:
            dead.verification = self._verify(task)
            stop = "verified" if dead.verified else "corrections_exhausted"
        if stop is None:
            return None
        d.end_attempt(task, dead, stop)
        return (REVIEW if stop == "verified" else BLOCKED), stop

    def _run_attempt(
        self, task: Task, number: int, role: str, prompt: str
    ) -> tuple[Attempt, codex.Before, snapshot.Ignored]:
        """Snapshot the tree, save what a resume needs, run Codex."""
        d = self.flight
        r = d.recipe.role(role)
        attempt = Attempt(number, role, r.model, r.reasoning)
        d.attempts.append(attempt)
        if number > d.used + 1:
            d.update(None, running_block(d.header, task.id, number, role, os.getpid()))
        d.before = before = codex.before(d.repo)
        ignored = snapshot.ignored_files(d.repo)
        d.guard.arm(saved=tasks_saved(d.run_dir, number))
        taskstate.save_running(
            d.plan_home,
            d.task_id,
            attempts=number,
            role=role,
            before=list(before),
            ignored=taskstate.ignored_for_resume(ignored),
            usage_sum=d.usage_so_far(),  # the finished runs' tokens, for `status`
        )
        if d.plan_repo is not None:  # a wave: the user's refs are the worktree's too
            d.refs_before = codex.refs(d.plan_repo)
        d.console.say(f"  attempt {number} · {role} ({r.model}, {r.reasoning}) …")
        d.phase = f"attempt {number} (codex)"
        codex.run_codex(
            attempt,
            prompt,
            recipe=d.recipe,
            run_dir=d.run_dir,
            root=d.repo.root,
            codex_env=d.codex_env,
            env=d.env,
            home=d.session.home,
            heartbeat=d.heartbeat(f"codex still working on {d.task_id}"),
            on_start=self._started,
            cancel=d.cancel,
            on_line=d.codex_line if d.plan_repo is not None else None,
            extra=d.codex_flags,
        )
        return attempt, before, ignored

    def _attempts(self, tf: TaskFile, task: Task, scope: Scope, prompt: str) -> tuple[str, str]:
        d = self.flight
        limits = d.recipe.limits
        failures: list[VerifyRun] = []
        number = d.used
        idle = 0  # attempts in a row that changed nothing
        if d.resumed is not None:
            ended = self._dead_attempt(task, scope)
            if ended is not None:
                return ended
        while True:
            number += 1
            role = recipes.CORRECTOR if failures else recipes.IMPLEMENTER
            if failures:
                base = d.context(tf, task)
                context = prompts.correction_context(
                    base, d.attempts, number - 1, limits.max_corrections, failures
                )
                prompt = d.render("codex/correction.md.j2", context, refuse=False)
            attempt, before, ignored = self._run_attempt(task, number, role, prompt)
            self._check_tree(attempt, scope, before, ignored)
            d.guard.disarm()
            stop = codex.classify(attempt)
            if stop is not None:
                d.end_attempt(task, attempt, stop)
                return BLOCKED, stop
            attempt.verification = self._verify(task)
            if attempt.verified:
                d.end_attempt(task, attempt, "verified")
                return REVIEW, "verified"
            attempt.outcome = "verification_failed"
            said = codex.no_change(attempt, d.env)
            if said is not None:
                d.console.say(f"    {said}")
            idle = idle + 1 if said is not None else 0
            d.log(report.attempt_record(d.header, task, attempt))
            failures = [v for v in attempt.verification if not v.passed]
            corrections_used = number - 1
            # a correction only when a verification can still follow it (it always does here:
            # every attempt is verified), and never past the recipe's cap
            if corrections_used >= limits.max_corrections:
                return BLOCKED, "corrections_exhausted"
            if idle >= NO_CHANGE_LIMIT:  # early: more runs of an idle Codex change nothing
                return BLOCKED, "no_change"


def run(
    session: Session,
    task_id: str,
    *,
    recipe: recipes.Recipe | None = None,
    accept_recipe: bool = False,
    dry_run: bool = False,
    on_interrupt: Callable[[DispatchResult], None] | None = None,
) -> DispatchResult:
    """Dispatch one task; returns the result (its exit_code says Review 0 or Blocked 6).
    `on_interrupt` gets the In Progress result when Ctrl-C or a signal stops it."""
    tid = preconditions.normalise_id(task_id)
    return Dispatcher(
        session,
        tid,
        recipe or recipes.current(),
        accept_recipe=accept_recipe,
        dry_run=dry_run,
        on_interrupt=on_interrupt,
    ).run()
