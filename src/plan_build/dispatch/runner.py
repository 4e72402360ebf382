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
from collections.abc import Callable
from dataclasses import dataclass

from plan_build import interrupts, proc, snapshot
from plan_build.context import Session
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
from plan_build.dispatch.evidence import Attempt, DispatchResult, VerifyRun, running_block
from plan_build.dispatch.inflight import InFlight
from plan_build.dispatch.lock import DispatchLock as Lock
from plan_build.dispatch.scope import Scope
from plan_build.dispatch.taskmodel import BLOCKED, IN_PROGRESS, PENDING, REVIEW, Task, TaskFile
from plan_build.dispatch.verification import verify
from plan_build.errors import PlanBuildError
from plan_build.gitrepo import Repo

NO_CHANGE_LIMIT = 2  # attempts in a row that change nothing while verification fails

# ----------------------------------------------------------------------------- small helpers


def repo_files(repo: Repo) -> list[str]:
    """Tracked and untracked (not ignored) files, for spotting scope entries that match nothing."""
    out = repo.git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    return [p for p in out.split("\0") if p]


# ----------------------------------------------------------------------------- state


# ----------------------------------------------------------------------------- the step


@dataclass
class Dispatcher(InFlight):
    accept_recipe: bool = False
    dry_run: bool = False
    on_interrupt: Callable[[DispatchResult], None] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.lock: Lock | None = None

    def _started(self, pgid: int) -> None:
        if self.lock is not None:
            self.lock.record_group(pgid)

    def _verify(self, task: Task) -> list[VerifyRun]:
        def phase(text: str) -> None:
            self.phase = f"verification ({text})"

        return verify(
            task,
            root=self.repo.root,
            env=self.env,
            limit=self.recipe.limits.verification_timeout_seconds,
            console=self.console,
            heartbeat=self.heartbeat,
            on_start=self._started,
            on_command=phase,
        )

    def _check_tree(
        self,
        a: Attempt,
        scope: Scope,
        before: codex.Before,
        ignored: snapshot.Ignored | None,
    ) -> None:
        self.phase = f"attempt {a.number} (scope check)"
        codex.check_tree(
            self.repo, a, scope, before, ignored, byproducts=self.byproducts, guard=self.guard
        )
        report.say_attempt(self.console, a)

    # -- the run --------------------------------------------------------------------

    def run(self) -> DispatchResult:
        tf, task = preconditions.load(self.path, self.task_id)
        preconditions.check(self.repo, tf, task)
        if proc.which("codex", self.env) is None:
            raise proc.CommandNotFound("codex")
        self.mode = memscope.memory_mode(self.env)
        self.codex_env = memscope.codex_env(self.repo.root, self.env, self.mode)
        if not self.dry_run:
            recipes.check_pinned(
                self.repo.state_dir, self.recipe, accept=self.accept_recipe, task_id=task.id
            )
        if self.mode == "required":
            self.slot = memscope.checkpoint(self.repo.root, self.env, self.session.home)
            if self.slot.state == "unavailable":
                self.console.say(
                    f"plan-build: warning: the workflow_status checkpoint is unavailable "
                    f"({self.slot.reason}); the prompt says so"
                )
        context = self.context(tf, task)
        prompt = self.render("codex/task.md.j2", context, refuse=True)
        if self.dry_run:
            out = self.run_dir / "attempt-1.last-message.md"
            argv = prompts.codex_argv(self.recipe, recipes.IMPLEMENTER, out, "<prompt>")
            report.write_dry_run(self.session.stdout.write, argv, prompt, task)
            status = task.status or PENDING
            return DispatchResult(
                task.id, self.dispatch_id, status, "dry_run", [], [], 0.0, self.described, True
            )

        lock = Lock(self.repo.state_dir / "dispatch" / "lock", task.id)
        stopped = lock.acquire()
        self.lock = lock
        report.say_stopped(self.console, stopped)
        try:
            with interrupts.stopping():
                return self._loop(tf, task, prompt)
        finally:
            lock.release()

    def _begin(self, task: Task) -> tuple[Scope, str]:
        """Resume or start: the messages, Status In Progress, the saved running state."""
        scope = Scope(task.scope, self.repo.names)
        self.byproducts = preconditions.byproducts(self.session.config, self.repo.names)
        self.resumed = taskstate.resumable(self.repo, task)
        if self.resumed is not None:
            # the same dispatch goes on: its id, its baseline, its budget of Codex runs
            self.dispatch_id = str(self.resumed.get("dispatch") or self.dispatch_id)
            self.run_dir = self.repo.state_dir / "dispatch" / "runs" / self.dispatch_id
            self.started_at = str(self.resumed.get("started") or self.started_at)
            used = self.resumed.get("attempts")
            self.used = used if isinstance(used, int) and used >= 0 else 0
        report.say_start(
            self.console,
            task,
            self.header,
            resumed=self.resumed is not None,
            used=self.used,
            max_attempts=self.max_attempts,
            unmatched=scope.unmatched(repo_files(self.repo)),
        )
        # the baseline comes before the status changes: if the snapshot fails, nothing did
        baseline = str(self.resumed["baseline_tree"]) if self.resumed else codex.tree(self.repo)
        self.update(
            IN_PROGRESS,
            running_block(self.header, task.id, self.used + 1, recipes.IMPLEMENTER, os.getpid()),
        )
        if self.resumed is not None:
            taskstate.save_running(self.repo, self.task_id, pid=os.getpid())
        else:
            taskstate.start_running(self.repo, task.id, self.dispatch_id, baseline, self.started_at)
        return scope, baseline

    def _loop(self, tf: TaskFile, task: Task, prompt: str) -> DispatchResult:
        scope, baseline = self._begin(task)
        status, reason = BLOCKED, "interrupted"
        try:
            status, reason = self._attempts(tf, task, scope, prompt)
        except PlanBuildError as exc:
            if isinstance(exc, proc.CommandCancelled):
                outcome.interrupted(self, task, exc)
            else:  # a failed snapshot, an unwritable state dir: never leave it In Progress
                outcome.failed(self, task, exc)
            raise
        except BaseException as exc:
            outcome.interrupted(self, task, exc)
            if self.on_interrupt is not None and isinstance(exc, KeyboardInterrupt):
                with contextlib.suppress(Exception):
                    self.on_interrupt(self.result(IN_PROGRESS, "interrupted", []))
            raise
        return outcome.finish(self, task, status, reason, baseline)

    def _dead_attempt(self, task: Task, scope: Scope) -> tuple[str, str] | None:
        """A resumed dispatch first checks what happened since the dead run's last Codex run
        began (its changes, and anything a survivor wrote), against that run's snapshot."""
        running = self.resumed or {}
        before = running.get("before")
        if not (isinstance(before, list) and len(before) == 3) or self.used < 1:
            return None
        role = str(running.get("role") or recipes.IMPLEMENTER)
        r = self.recipe.role(role)
        dead = Attempt(self.used, role, r.model, r.reasoning)
        dead.notes.append(
            f"the dispatch running this attempt stopped (pid {running.get('pid', '?')}); "
            "its changes were checked when the dispatch resumed"
        )
        self.attempts.append(dead)
        ignored = snapshot.Ignored.from_json(running.get("ignored"))
        self._check_tree(dead, scope, (str(before[0]), before[1], str(before[2])), ignored)
        stop = "scope" if dead.outside else "git_state" if dead.git_moves else None
        if stop is None and self.used >= self.max_attempts:
            dead.verification = self._verify(task)
            stop = "verified" if dead.verified else "corrections_exhausted"
        if stop is None:
            return None
        self.end_attempt(task, dead, stop)
        return (REVIEW if stop == "verified" else BLOCKED), stop

    def _run_attempt(
        self, task: Task, number: int, role: str, prompt: str
    ) -> tuple[Attempt, codex.Before, snapshot.Ignored]:
        """Snapshot the tree, save what a resume needs, run Codex."""
        r = self.recipe.role(role)
        attempt = Attempt(number, role, r.model, r.reasoning)
        self.attempts.append(attempt)
        if number > self.used + 1:
            self.update(None, running_block(self.header, task.id, number, role, os.getpid()))
        self.before = before = codex.before(self.repo)
        ignored = snapshot.ignored_files(self.repo)
        taskstate.save_running(
            self.repo,
            self.task_id,
            attempts=number,
            role=role,
            before=list(before),
            ignored=taskstate.ignored_for_resume(ignored),
        )
        self.console.say(f"  attempt {number} · {role} ({r.model}, {r.reasoning}) …")
        self.phase = f"attempt {number} (codex)"
        self.guard.arm()
        codex.run_codex(
            attempt,
            prompt,
            recipe=self.recipe,
            run_dir=self.run_dir,
            root=self.repo.root,
            codex_env=self.codex_env,
            env=self.env,
            home=self.session.home,
            heartbeat=self.heartbeat(f"codex still working on {self.task_id}"),
            on_start=self._started,
        )
        return attempt, before, ignored

    def _attempts(self, tf: TaskFile, task: Task, scope: Scope, prompt: str) -> tuple[str, str]:
        limits = self.recipe.limits
        failures: list[VerifyRun] = []
        number = self.used
        idle = 0  # attempts in a row that changed nothing
        if self.resumed is not None:
            ended = self._dead_attempt(task, scope)
            if ended is not None:
                return ended
        while True:
            number += 1
            role = recipes.CORRECTOR if failures else recipes.IMPLEMENTER
            if failures:
                base = self.context(tf, task)
                context = prompts.correction_context(
                    base, self.attempts, number - 1, limits.max_corrections, failures
                )
                prompt = self.render("codex/correction.md.j2", context, refuse=False)
            attempt, before, ignored = self._run_attempt(task, number, role, prompt)
            self._check_tree(attempt, scope, before, ignored)
            self.guard.disarm()
            stop = codex.classify(attempt)
            if stop is not None:
                self.end_attempt(task, attempt, stop)
                return BLOCKED, stop
            attempt.verification = self._verify(task)
            if attempt.verified:
                self.end_attempt(task, attempt, "verified")
                return REVIEW, "verified"
            attempt.outcome = "verification_failed"
            said = codex.no_change(attempt, self.env)
            if said is not None:
                self.console.say(f"    {said}")
            idle = idle + 1 if said is not None else 0
            self.log(report.attempt_record(self.header, task, attempt))
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
