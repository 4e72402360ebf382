"""`dispatch --wave`: every ready task at once, each in its own worktree (docs/adr/0180).

The wave (`waveplan`) is every Pending task whose dependencies are Complete, except that two
tasks whose scopes may share a file never run side by side. Each task gets a linked worktree
(`worktrees`) holding the user's work tree as it is now, and runs there through the same loop
as `dispatch TASK-ID` (`runner.Dispatcher`: scope check, verification, at most two
corrections), its status and evidence written into the user's TASKS.md one writer at a time.
An accepted (verified) result is applied to the user's work tree (`applyback`) only where it
meets nothing the user or an earlier task changed meanwhile; otherwise the task stays in
Review with the conflict named and its worktree kept. The wave's record (`wavestate`) says
what ran where, so Ctrl-C or a SIGKILL leaves nothing running and a rerun resumes only the
unfinished tasks.

Over 400 lines on purpose: one task's path through a wave (its worktree and its readiness,
its dispatch, its setup, applying its result, resuming it) shares the wave's state, lock and
cancel event; split across modules, each piece would take the whole `Wave` anyway.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

from plan_build.core import clock, interrupts, proc, snapshot
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.core.gitrepo import Repo
from plan_build.dispatch import (
    applyback,
    outcome,
    preconditions,
    taskfile,
    taskstate,
    waveisolation,
    waveplan,
    wavestate,
    worktreeprep,
    worktrees,
)
from plan_build.dispatch import attempt as codex
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch.evidence import tail
from plan_build.dispatch.inflight import WRITING, InFlight
from plan_build.dispatch.runner import Dispatcher
from plan_build.dispatch.scope import Byproducts
from plan_build.dispatch.taskmodel import IN_PROGRESS, REVIEW, Task
from plan_build.dispatch.waveprogress import WaveProgress, heartbeat_every
from plan_build.dispatch.waveresult import TaskRun, WaveResult

APPLYING = threading.Lock()  # one result at a time goes into the user's work tree
SETUP_TAIL_LINES = 15
SETUP_TAIL_CHARS = 2_000


class Wave:
    def __init__(
        self,
        session: Session,
        recipe: recipes.Recipe,
        *,
        jobs: int,
        accept_recipe: bool,
        on_interrupt: Callable[[WaveResult], None] | None = None,
    ) -> None:
        self.on_interrupt = on_interrupt
        self.session = session
        self.user: Repo = session.repo
        self.recipe = recipe
        self.jobs = jobs
        self.accept_recipe = accept_recipe
        self.cancel = threading.Event()
        self.state = wavestate.WaveState(self.user)
        self.runs: dict[str, TaskRun] = {}
        self.applied_by: dict[str, str] = {}  # path → the task of this wave that applied it
        self.start_tree = ""
        self.ids: frozenset[str] = frozenset()
        self.progress: WaveProgress | None = None
        self.prep = worktreeprep.Prep()
        self.ports: set[int] = set()
        self.said: set[str] = set()  # notes said once per wave
        self.started_ns = 0  # when the wave took its snapshot (for ignored files' ctimes)

    # -- the plan ---------------------------------------------------------------------

    def plan(self) -> tuple[waveplan.WavePlan, bool]:
        """The tasks to run now: the unfinished ones of a stopped wave, else the next wave."""
        tf = taskfile.read(self.user.inside(self.user.root / taskfile.FILENAME))
        record = self.state.data or wavestate.read(self.user)
        left = [tf.get(t) for t in wavestate.unfinished(record)]
        resume = [t for t in left if t is not None and t.status in (IN_PROGRESS, REVIEW)]
        if resume:
            return self._warned(waveplan.WavePlan(run=resume)), True
        others = [t.id for t in tf.tasks if t.status == IN_PROGRESS]
        if others:
            raise usage(
                f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} In Progress "
                "outside a wave",
                f"finish or resume it first: plan-build dispatch {others[0]}",
            )
        return self._warned(waveplan.plan(tf, jobs=self.jobs, names=self.user.names)), False

    def _warned(self, plan: waveplan.WavePlan) -> waveplan.WavePlan:
        """The plan with a warning for each task whose verification needs what git ignores
        and nothing configured brings into its worktree."""
        for t in plan.run:
            found = worktreeprep.gaps(self.user, t, self.prep)
            if found:
                plan.warnings.append((t, worktreeprep.gap_words(found)))
        return plan

    # -- one task ---------------------------------------------------------------------

    def _worktree(self, tid: str) -> tuple[Repo, bool]:
        """The task's worktree: the kept one of a stopped wave (False), else a new one (True),
        filled by `worktreeprep` (copies, links, submodules) before its setup runs."""
        entry = self.state.task(tid)
        kept = Path(str(entry["worktree"])) if entry.get("worktree") else None
        found = worktrees.open_existing(self.user, kept) if kept else None
        if found is not None and entry.get("start"):
            return found, False
        if kept is not None and kept.exists():  # half made (or never set up) when it stopped
            worktrees.remove(self.user, kept)
        if entry:  # its worktree is gone: what it ran cannot be resumed, so it starts over
            saved = taskstate.read(self.user, tid)
            taskstate.write(self.user, tid, {k: v for k, v in saved.items() if k != "running"})
        path = worktrees.where(self.user, self.state.wave_id, tid)
        self.state.set(tid, worktree=str(path), state="running", start=None)  # named first
        made = worktrees.create(self.user, self.state.wave_id, tid, self.start_tree)
        ready = worktreeprep.prepare(self.user, made, self.prep)
        self.state.set(tid, linked=ready.linked, copied=ready.copied)
        return made, True

    def _session(self, wt: Repo, task_id: str, port: int) -> Session:
        console = self.progress.relay(task_id) if self.progress else self.session.console
        s = Session(
            cwd=wt.root,
            env=worktreeprep.task_env(self.session.env, self.user, wt, task_id, port),
            console=console,
            ui=self.session.ui,
            resources=self.session.resources,
            stdout=io.StringIO(),
        )
        s._repos[wt.root] = wt
        return s

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.say(text)
        else:
            self.session.console.say(text)

    def _one(self, task: Task) -> None:
        run = self.runs[task.id]
        run.started = time.monotonic()
        try:
            entry = self.state.task(task.id)
            if entry.get("state") == "verified":  # stopped after verification, before applying
                self._apply(run, None, entry)
            elif entry and task.status == REVIEW:  # stopped after the outcome was written
                self._apply_finished(run, task, entry)
            else:
                self._dispatch(run, task)
        except proc.CommandCancelled:
            run.outcome, run.why = "interrupted", "stopped by the wave's interruption"
            self.state.set(task.id, state="interrupted")
        except PlanBuildError as exc:  # refused before anything ran (it changed nothing)
            run.outcome, run.why = "refused", exc.what + (f" ({exc.fix})" if exc.fix else "")
            self._say(f"plan-build: {task.id} not run: {run.why}")
            if run.worktree and not self.state.task(task.id).get("base"):
                worktrees.remove(self.user, Path(run.worktree))
                run.worktree = ""
            self.state.set(task.id, state="refused", why=exc.what)
        finally:
            run.seconds = time.monotonic() - run.started
            run.state = f"done ({run.outcome or 'stopped'})"

    def _dispatch(self, run: TaskRun, task: Task) -> None:
        """The task's dispatch in its worktree; a verified result is then applied."""
        run.state = "creating worktree"
        began = time.monotonic()
        wt, new = self._worktree(task.id)
        run.worktree_seconds = time.monotonic() - began
        run.worktree = str(wt.root)
        entry = self.state.task(task.id)
        port = int(entry.get("port") or 0) or worktreeprep.free_port(self.ports)
        self.state.set(task.id, worktree=str(wt.root), state="running", port=port)
        disp = Dispatcher(
            self._session(wt, task.id, port),
            task.id,
            self.recipe,
            plan_repo=self.user,
            cancel=self.cancel,
        )
        disp.on_group = lambda pgid: self.state.group(task.id, pgid)
        disp.linked = tuple(str(x) for x in entry.get("linked") or [])
        disp.env_gaps = worktreeprep.gaps(
            self.user, task, self.prep, [str(x) for x in entry.get("copied") or []]
        )
        run.flight = d = disp.flight
        run.state = "starting"
        tf, t, prompt = disp.prepare(alongside=self.ids)
        own = waveisolation.codex_setting(self.user, wt, d.env, self.session.home)
        d.codex_env.update(own.env)
        d.codex_flags = own.flags
        for note in own.notes:
            if note not in self.said:
                self.said.add(note)
                self._say(f"plan-build: note: {note}")
        if self.cancel.is_set():
            raise proc.CommandCancelled(["codex"])
        if new:
            if self.prep.setup:
                run.state = d.phase = "worktree setup"
            if not self._setup(run, disp, t, wt):
                return
            d.phase = "starting"
            # what the task's change is counted from when it is applied, whatever its
            # dispatch records (a dispatch begun again here would start from its own result)
            self.state.set(task.id, start=codex.tree(wt))
        try:
            result = disp.loop(tf, t, prompt)
        except proc.CommandCancelled:
            raise
        except PlanBuildError as exc:  # plan-build failed mid-dispatch: the task is Blocked
            run.outcome, run.why = "blocked", f"plan-build failed: {exc.what}"
            self.state.set(task.id, state="blocked", why=run.why)
            return
        run.result = result
        if result.status != REVIEW:
            run.outcome, run.why = "blocked", result.reason
            self.state.set(task.id, state="blocked", why=result.reason)
            return
        start = self.state.task(task.id).get("start")
        self._verified(run, wt, str(start or d.baseline), d.byproducts, d)

    def _setup(self, run: TaskRun, disp: Dispatcher, task: Task, wt: Repo) -> bool:
        """The project's setup command in the new worktree; False when it failed (the task
        is then Blocked `setup_failed`, with no Codex run spent)."""
        d = disp.flight
        log = wavestate.folder(self.user) / "setup" / f"{self.state.wave_id}-{task.id}.log"
        done = worktreeprep.run_setup(
            self.prep, wt, d.env, log, cancel=self.cancel, on_start=disp._started
        )
        if done is None or done.ok:
            return True
        why = worktreeprep.setup_why(done, self.prep)
        output = tail(done.stdout + done.stderr, SETUP_TAIL_LINES, SETUP_TAIL_CHARS)
        run.result = outcome.setup_failed(d, task, why, output, self._shown(str(log)))
        run.outcome, run.why = "blocked", f"setup_failed: {why}"
        self.state.set(task.id, state="blocked", why=run.why, log=str(log))
        self._say(f"plan-build: {task.id} Blocked · {why} (output: {self._shown(str(log))})")
        return False

    def _verified(
        self, run: TaskRun, wt: Repo, base: str, byproducts: Byproducts, d: InFlight | None
    ) -> None:
        end = codex.tree(wt)
        changed = snapshot.changed_paths(wt, base, end)
        entry = {
            "base": base,
            "end": end,
            "paths": [p for p in changed if not byproducts.matches(p)],
        }
        self.state.set(run.task_id, state="verified", **entry)
        self._apply(run, d, entry)

    def _apply_finished(self, run: TaskRun, task: Task, entry: dict[str, Any]) -> None:
        """The task's dispatch ended in Review, but the wave stopped before it was applied."""
        kept = Path(str(entry.get("worktree") or ""))
        wt = worktrees.open_existing(self.user, kept) if entry.get("worktree") else None
        if wt is None or not entry.get("start"):
            raise PlanBuildError(
                f"{task.id} ended in Review but its worktree is gone, so its result cannot "
                "be applied",
                f"dispatch it again: plan-build dispatch {task.id}",
                code=ExitCode.BLOCKED,
            )
        run.worktree = str(wt.root)
        byproducts = preconditions.byproducts(self.session.config, self.user.names)
        self._verified(run, wt, str(entry["start"]), byproducts, None)

    def _apply(self, run: TaskRun, d: InFlight | None, entry: dict[str, Any]) -> None:
        run.state = "applying"
        run.worktree = run.worktree or str(entry.get("worktree") or "")
        paths = [str(p) for p in entry.get("paths") or []]
        with APPLYING:
            try:
                # TASKS.md's atomic replace leaves a temporary file beside it for a moment,
                # which a snapshot taken meanwhile would name and then fail to read
                with WRITING:
                    now = codex.tree(self.user)
                got = applyback.apply(
                    self.user,
                    task_id=run.task_id,
                    base=str(entry["base"]),
                    end=str(entry["end"]),
                    now=now,
                    paths=paths,
                    applied_by=self.applied_by,
                )
            except PlanBuildError as exc:  # a git failure, a path behind a symbolic link
                got = applyback.Applied(conflicts=[f"plan-build could not apply it: {exc.what}"])
            if got.ok:
                for p in got.paths:
                    self.applied_by[p] = run.task_id
        if got.ok:
            run.outcome, run.applied = "applied", got.paths
            note = (
                f"- Applied to your work tree from the wave's worktree: {len(got.paths)} "
                "file(s)"
                + (": " + ", ".join(f"`{p}`" for p in got.paths[:12]) if got.paths else "")
            )
            kept = self._ignored_back(run, d, entry)
            if kept.brought:
                note += "\n- Ignored by git, brought back too: " + ", ".join(
                    f"`{p}`" for p in kept.brought[:12]
                )
            if kept.kept:
                note += (
                    "\n- Ignored by git, changed in scope and NOT brought back (your copy "
                    "changed too, or it is not a plain file): "
                    + ", ".join(f"`{p}`" for p in kept.kept[:12])
                    + f"; they stay in the worktree `{self._shown(run.worktree)}`"
                )
            self._note(d, note)
            if kept.kept:
                run.why = "ignored files kept in its worktree: " + ", ".join(kept.kept[:6])
                self.state.set(run.task_id, state="ignored_kept", why=run.why)
                return
            self.state.set(run.task_id, state="applied")
            if run.worktree:
                worktrees.remove(self.user, Path(run.worktree))
            return
        run.outcome, run.why = "conflict", "; ".join(got.conflicts)
        note = (
            "- Not applied to your work tree: it meets changes made since the wave began: "
            + "; ".join(got.conflicts)
            + f". The verified result stays in the worktree `{self._shown(run.worktree)}`"
        )
        self._note(d, note)
        self.state.set(run.task_id, state="conflict", why=run.why)
        self._say(f"plan-build: {run.task_id} stays in Review, not applied: {run.why}")

    def _ignored_back(
        self, run: TaskRun, d: InFlight | None, entry: dict[str, Any]
    ) -> applyback.IgnoredBack:
        """The task's in-scope edits of ignored files, brought back or kept (never lost)."""
        entry = {**self.state.task(run.task_id), **entry}
        linked = [str(x) for x in entry.get("linked") or []]
        copied = [str(x) for x in entry.get("copied") or []]
        wt = worktrees.open_existing(self.user, Path(run.worktree)) if run.worktree else None
        if d is not None:
            paths = [p for a in d.attempts for p in a.ignored]
        elif wt is not None:  # resumed after its dispatch ended: every ignored file there
            found = snapshot.ignored_files(wt)
            brought = [*linked, *copied]
            paths = [*found.files, *(x for x in found.dirs if x not in brought)]
        else:
            paths = []
        paths = [
            p
            for p in dict.fromkeys(paths)
            if not any(p == n or p.startswith(n + "/") for n in linked)
        ]
        if not paths:
            return applyback.IgnoredBack()
        if wt is None:
            return applyback.IgnoredBack(kept=paths)
        with APPLYING:
            return applyback.ignored_back(
                self.user, wt, paths, copied=copied, since_ns=self.started_ns
            )

    def _shown(self, path: str) -> str:
        try:
            return str(Path(path).relative_to(self.user.root))
        except ValueError:
            return path

    def _note(self, d: InFlight | None, line: str) -> None:
        """Add `line` to the task's last evidence block (kept in its run folder)."""
        if d is None:
            return
        saved = d.run_dir / "evidence.md"
        with contextlib.suppress(OSError, PlanBuildError):
            block = saved.read_text(encoding="utf-8").rstrip("\n") + "\n" + line + "\n"
            saved.write_text(block, encoding="utf-8")
            d.update(None, block)

    # -- the wave ---------------------------------------------------------------------

    def run(self, *, dry_run: bool) -> WaveResult:
        console = self.session.console
        if self.user.head() is None:
            raise usage(
                "a wave needs a commit to create its worktrees from, and this repository has none",
                "commit once (git commit), then run plan-build dispatch --wave again",
            )
        self.prep = worktreeprep.configured(self.user, self.session.config, self.session.home)
        if dry_run:
            plan, resumed = self.plan()
            console.say("plan-build: wave (dry run):")
            for line in plan.lines():
                console.say(line)
            return WaveResult("", plan, [], resumed, dry_run=True)
        if proc.which("codex", self.session.env) is None:
            raise proc.CommandNotFound("codex")
        early, resumed = self.plan()  # read again under the lock below
        if not early.run and not resumed:  # nothing to run: no id, no lock, no pin written
            console.say("plan-build: no task is ready to run")
            for line in early.lines():
                console.say(line)
            return WaveResult("", early, [], False)
        recipes.check_pinned(
            self.user.state_dir, self.recipe, accept=self.accept_recipe, task_id="--wave"
        )
        stopped = self.state.acquire()
        try:
            if stopped:
                console.say(
                    f"plan-build: stopped {len(stopped)} process(es) a stopped wave left running"
                )
            plan, resumed = self.plan()
            wave_id = self.state.wave_id if resumed else f"{clock.compact()}-{os.urandom(2).hex()}"
            self.state.begin(wave_id, resumed)
            console.say(
                f"plan-build: wave {wave_id}"
                + (" (resumed: only its unfinished tasks)" if resumed else "")
                + f" · {len(plan.run)} task(s), at most {self.jobs} at once"
            )
            for line in plan.lines():
                console.say(line)
            result = WaveResult(wave_id, plan, [], resumed)
            if not plan.run:
                console.say("plan-build: no task is ready to run")
                return result
            self.ids = frozenset(t.id for t in plan.run)
            self.runs = {t.id: TaskRun(t.id) for t in plan.run}
            result.runs = list(self.runs.values())
            self.started_ns = time.time_ns()
            self.start_tree = snapshot.worktree_tree(self.user)
            try:
                with interrupts.stopping():
                    self._run_all(plan.run)
            except KeyboardInterrupt:
                if self.on_interrupt is not None:
                    with contextlib.suppress(Exception):
                        self.on_interrupt(result)
                raise
            self._summary(result)
            return result
        finally:
            with contextlib.suppress(Exception):
                self.state.finish()
            self.state.release()

    def _run_all(self, tasks: list[Task]) -> None:
        every = heartbeat_every(self.session.env)
        with (
            WaveProgress(self.session.console, list(self.runs.values()), every=every) as progress,
            futures.ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="wave") as pool,
        ):
            self.progress = progress
            pending = [pool.submit(self._one, t) for t in tasks]
            try:
                while pending:
                    done, left = futures.wait(pending, timeout=0.2)
                    for f in done:
                        f.result()
                    pending = list(left)
            except BaseException as exc:
                what = (
                    interrupts.signal_name(exc) if isinstance(exc, KeyboardInterrupt) else str(exc)
                )
                for run in self.runs.values():
                    if run.flight is not None:
                        run.flight.stopped_by = what
                self.cancel.set()
                with interrupts.held_back():
                    futures.wait(pending)
                raise
            finally:
                self.progress = None

    def _summary(self, result: WaveResult) -> None:
        say = self.session.console.say
        say(f"plan-build: wave {result.wave_id} ended:")
        for r in result.runs:
            where = (
                f" (worktree kept: {self._shown(r.worktree)})"
                if r.worktree and (r.outcome != "applied" or r.why)
                else ""
            )
            status = r.result.status if r.result else "-"
            say(f"  {r.task_id}: {status} · {r.outcome}{' · ' + r.why if r.why else ''}{where}")


def run(
    session: Session,
    *,
    jobs: int | None = None,
    dry_run: bool = False,
    accept_recipe: bool = False,
    recipe: recipes.Recipe | None = None,
    on_interrupt: Callable[[WaveResult], None] | None = None,
) -> WaveResult:
    """Plan and run one wave (or resume a stopped one) in the session's work tree.
    `on_interrupt` gets the wave as it stood when Ctrl-C or a signal stopped it."""
    n = jobs if jobs is not None else waveplan.default_jobs()
    if not 1 <= n <= waveplan.MAX_JOBS:
        raise usage(
            f"--jobs {n} is out of range",
            f"use a number from 1 to {waveplan.MAX_JOBS} (default: the core count, at most 4)",
        )
    wave = Wave(
        session,
        recipe or recipes.current(),
        jobs=n,
        accept_recipe=accept_recipe,
        on_interrupt=on_interrupt,
    )
    return wave.run(dry_run=dry_run)


__all__ = ["TaskRun", "Wave", "WaveResult", "run"]
