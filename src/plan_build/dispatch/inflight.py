"""A dispatch in flight: its identity, its progress (attempts, phase, the snapshot before the
running Codex) and the records it keeps: the task's block in TASKS.md and the telemetry log.

The runner's loop and the endings in `outcome` both read and write this one state.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plan_build.core import clock, codexusage
from plan_build.core.context import Session
from plan_build.core.fsutil import atomic_write
from plan_build.core.gitrepo import Repo
from plan_build.dispatch import attempt as codex
from plan_build.dispatch import memslot, prompts, report, taskfile, telemetry
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch.evidence import Header, evidence_text, human_seconds
from plan_build.dispatch.results import Attempt, DispatchResult
from plan_build.dispatch.scope import Byproducts
from plan_build.dispatch.taskmodel import Task, TaskFile

# TASKS.md is read, spliced and replaced by one writer at a time: a wave's tasks share the file
WRITING = threading.Lock()


@dataclass
class InFlight:
    session: Session
    task_id: str
    recipe: recipes.Recipe
    # a wave runs the task in its own worktree (`session`) but records it in the user's plan:
    # `plan_repo` is the user's work tree, whose TASKS.md gets the status and evidence
    plan_repo: Repo | None = None
    cancel: threading.Event | None = None  # set from another thread: stop what runs now
    quiet_heartbeat: bool = False  # a wave's progress lines replace the per-command beat

    def __post_init__(self) -> None:
        self.console = self.session.console
        self.env = self.session.env
        self.repo = self.session.repo
        # the work tree whose TASKS.md records the task (and whose task state it has)
        self.plan_home = home = self.plan_repo or self.repo
        self.path = home.inside(home.root / taskfile.FILENAME)
        # Codex's own copy of TASKS.md, which it must not change (the worktree's in a wave)
        self.codex_plan = self.repo.inside(self.repo.root / taskfile.FILENAME)
        stamp = clock.compact()
        self.dispatch_id = f"{stamp}-{os.urandom(2).hex()}"
        self.run_dir = self.repo.state_dir / "dispatch" / "runs" / self.dispatch_id
        self.described = self.recipe.describe()
        self.attempts: list[Attempt] = []
        self.started = time.monotonic()
        self.started_at = clock.stamp()
        self.mode = "required"
        self.slot = memslot.SlotRead("skipped")
        self.phase = "starting"
        self.before: codex.Before | None = None  # the snapshot before the running Codex
        self.used = 0  # Codex runs of this dispatch before this process (a resumed dispatch)
        self.resumed: dict[str, Any] | None = None
        self.guard = codex.TasksGuard(self.codex_plan)  # TASKS.md as it was when Codex started
        self.byproducts = Byproducts()
        self.codex_env: dict[str, str] = dict(self.env)
        self.alongside: frozenset[str] = frozenset()  # the tasks of its wave, beside it
        self.codex_flags: list[str] = []  # a wave task's own sandbox settings (ADR 0197)
        # a wave: the user's refs (and HEAD) before the running Codex, to catch a move of them
        self.refs_before: str | None = None
        self.baseline: str | None = None  # the tree the dispatch began from (without TASKS.md)
        self.last_event = ""  # Codex's latest --json event, for a wave's progress line
        self.stopped_by: str | None = None  # a wave's Ctrl-C, said when `cancel` stops a run

    @property
    def header(self) -> Header:
        return Header(
            self.dispatch_id,
            self.started_at,
            self.described["id"],
            self.described["fingerprint"],
            self.mode,
            telemetry.session_of(self.env),
        )

    @property
    def max_attempts(self) -> int:
        return 1 + self.recipe.limits.max_corrections

    def render(self, name: str, context: dict[str, Any], *, refuse: bool) -> str:
        templates = self.session.resources.templates
        return prompts.render_prompt(
            templates, name, context, env=self.env, task_id=self.task_id, refuse=refuse
        )

    def context(self, tf: TaskFile, task: Task) -> dict[str, Any]:
        return prompts.context(
            tf,
            task,
            root=self.repo.root,
            env=self.env,
            mode=self.mode,
            slot=self.slot,
            alongside=self.alongside,
        )

    def update(self, status: str | None, block: str) -> None:
        """Set the task's Status (unless None) and write this dispatch's evidence block."""
        home = self.plan_repo or self.repo
        block = evidence_text(block, self.repo.root, self.session.home)
        with WRITING:
            home.inside(self.path)  # again: the tree may have changed while Codex ran
            text = taskfile.read(self.path).text
            if status is not None:
                text = taskfile.with_status(text, self.task_id, status)
            text = taskfile.with_block(text, self.task_id, self.dispatch_id, block)
            atomic_write(self.path, text)

    def codex_line(self, line: str) -> None:
        """One line of Codex's stdout as it arrives: its event names the progress line."""
        from plan_build.dispatch.waveprogress import event_label

        label = event_label(line)
        if label is not None:
            self.last_event = label

    def heartbeat(self, what: str) -> Callable[[float], None]:
        def beat(elapsed: float) -> None:
            if self.quiet_heartbeat:
                return
            self.console.say(f"  … {what} ({human_seconds(elapsed)})")

        return beat

    def log(self, record: dict[str, Any]) -> None:
        telemetry.append(self.repo.state_dir, record)

    def dispatch_record(self, task: Task, status: str, reason: str) -> dict[str, Any]:
        return report.dispatch_record(
            self.header,
            task,
            status,
            reason,
            slot=self.slot.state,
            attempts=self.attempts,
            seconds=time.monotonic() - self.started,
            usage_sum=self.usage_sum(),
        )

    def usage_sum(self) -> dict[str, Any]:
        """The dispatch's runs' token use as Codex reported it (ADR 0175), those of the
        process a resumed dispatch continues included."""
        return self._usage(self.attempts)

    def usage_so_far(self) -> dict[str, Any]:
        """`usage_sum` of the runs that finished (the last attempt is about to run)."""
        return self._usage(self.attempts[:-1])

    def _usage(self, attempts: list[Attempt]) -> dict[str, Any]:
        mine = codexusage.summed(a.events.usage for a in attempts)
        # a resumed dispatch: the runs the dead process had finished, as it saved them
        earlier = (self.resumed or {}).get("usage_sum")
        if not isinstance(earlier, dict):
            return mine.as_json()
        return codexusage.combined([codexusage.sum_from_json(earlier), mine]).as_json()

    def end_attempt(self, task: Task, attempt: Attempt, outcome: str) -> None:
        attempt.outcome = outcome
        self.log(report.attempt_record(self.header, task, attempt))

    def result(self, status: str, reason: str, changed: list[str]) -> DispatchResult:
        return DispatchResult(
            self.task_id,
            self.dispatch_id,
            status,
            reason,
            self.attempts,
            changed,
            time.monotonic() - self.started,
            self.described,
        )
