"""`dispatch TASK-ID`: one approved TASKS.md task through Codex, checked mechanically.

The loop (docs/dispatch.md, docs/adr/0062):
  checks (task lints, dependencies Complete, no other task In Progress, recipe pinned, codex
  on PATH) → Status: In Progress → for each attempt: snapshot the work tree, run
  `codex exec --sandbox workspace-write --json -o FILE <prompt>` (stdin closed, timeout), snapshot
  again; every changed path must be inside the task's scope, HEAD and the index must not move;
  then the task's verification commands. A failed verification earns a correction only while a
  verification after it is still possible (at most `max_corrections`). The task ends in Review
  (verified) or Blocked (with the reason), with evidence written into the task either way.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build import interrupts, proc, redact, snapshot
from plan_build.context import Session
from plan_build.dispatch import memslot, taskfile, telemetry
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch.evidence import (
    REASONS,
    SCOPE_MARKER,
    Attempt,
    DispatchResult,
    Header,
    VerifyRun,
    attempt_lines,
    final_block,
    human_seconds,
    next_step,
    one_line,
    running_block,
    tail,
)
from plan_build.dispatch.lock import DispatchLock as Lock
from plan_build.dispatch.scope import DEFAULT_BYPRODUCTS, Byproducts, Scope, byproduct_problem
from plan_build.dispatch.taskfile import (
    BLOCKED,
    COMPLETE,
    IN_PROGRESS,
    PENDING,
    REVIEW,
    Task,
    TaskFile,
)
from plan_build.errors import ExitCode, PlanBuildError, usage
from plan_build.fsutil import StateFileError, atomic_write, read_json, write_json
from plan_build.gitrepo import Repo, discover
from plan_build.render import render

MEMORY_MODES = ("required", "degraded")
SLOT_LABEL = "workflow_status"
MAX_PROMPT_BYTES = 120_000  # one argv element may not exceed 128 KiB on Linux
PROMPT_TAIL_CHARS = 6_000
PROMPT_TAIL_LINES = 120
SUMMARY_ITEMS = 8
HEARTBEAT_EVERY = 30.0
STDERR_TAIL_LINES = 8
STDERR_TAIL_CHARS = 1_500
# lines every codex run prints that say nothing about why it failed
STDERR_NOISE = re.compile(r"Reading additional input from stdin|Stack backtrace:|\s+\d+: ")

# Blocked for these reasons, the same task text would fail the same way: refuse to redispatch
# it unchanged. Codex failures and timeouts (network, auth) may succeed on a plain retry.
NEEDS_REVISION = {"scope", "scope_requested", "corrections_exhausted", "git_state", "no_change"}
NO_CHANGE_LIMIT = 2  # attempts in a row that change nothing while verification fails
MAX_SAVED_IGNORED = 5_000  # individually ignored files saved for a resume; more are not

# ----------------------------------------------------------------------------- small helpers


def normalise_id(raw: str) -> str:
    value = raw.strip()
    if taskfile.TASK_ID.match(value):
        return value
    m = re.fullmatch(r"(?i)task[-_ ]?(\d+)", value)
    hint = f"TASK-{int(m.group(1)):03d}" if m else "TASK-001"
    raise usage(f"{raw!r} is not a task id", f"use the id from TASKS.md, e.g. {hint}")


def memory_mode(env: Mapping[str, str]) -> str:
    mode = env.get("PLAN_BUILD_MEMORY_MODE") or "required"
    if mode not in MEMORY_MODES:
        raise usage(
            f"PLAN_BUILD_MEMORY_MODE is {mode!r}; it must be required or degraded",
            "relaunch through plan-build architect, or unset PLAN_BUILD_MEMORY_MODE",
        )
    return mode


def project_identity(root: Path, env: Mapping[str, str]) -> dict[str, str | None]:
    path = root / ".agentmemory-project"
    try:
        value = path.read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError):
        value = []
    if value and value[0].strip():
        return {"id": value[0].strip(), "source": ".agentmemory-project", "missing": None}
    if env.get("AGENTMEMORY_PROJECT_NAME"):
        return {"id": env["AGENTMEMORY_PROJECT_NAME"], "source": "env", "missing": None}
    return {"id": None, "source": None, "missing": ".agentmemory-project is missing"}


def _listing(tasks: list[Task]) -> str:
    shown = [f"{t.id} {t.title}".strip() for t in tasks[:SUMMARY_ITEMS]]
    if len(tasks) > SUMMARY_ITEMS:
        shown.append(f"and {len(tasks) - SUMMARY_ITEMS} more")
    return "; ".join(shown)


def checkpoint_summary(tf: TaskFile, current: Task) -> dict[str, str]:
    others = [t for t in tf.tasks if t.id != current.id]
    nxt = next((t for t in others if t.status == PENDING), None)
    return {
        "complete": _listing([t for t in others if t.status == COMPLETE]),
        "in_flight": _listing([t for t in others if t.status in (IN_PROGRESS, REVIEW)]),
        "blocked": _listing([t for t in others if t.status == BLOCKED]),
        "next": f"{nxt.id} {nxt.title}" if nxt else "",
    }


def _dependency_closure(tf: TaskFile, task: Task) -> set[str]:
    seen: set[str] = set()
    todo = [task.id]
    while todo:
        tid = todo.pop()
        if tid in seen:
            continue
        seen.add(tid)
        t = tf.get(tid)
        if t is not None:
            todo.extend(t.dependencies)
    return seen


def repo_files(repo: Repo) -> list[str]:
    """Tracked and untracked (not ignored) files, for spotting scope entries that match nothing."""
    out = repo.git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    return [p for p in out.split("\0") if p]


# ----------------------------------------------------------------------------- state


def _task_state_path(repo: Repo, task_id: str) -> Path:
    return repo.state_dir / "dispatch" / "tasks" / f"{task_id}.json"


def _read_task_state(repo: Repo, task_id: str) -> dict[str, Any]:
    """The task's dispatch state ({} before its first dispatch)."""
    path = _task_state_path(repo, task_id)
    fix = f"delete it to forget task {task_id}'s earlier dispatches, then dispatch again"
    try:
        data = read_json(path, fix)
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict):
        raise StateFileError(path, "it is not a task state (not a JSON object)", fix)
    return data


def _write_task_state(repo: Repo, task_id: str, data: Mapping[str, Any]) -> None:
    write_json(_task_state_path(repo, task_id), data, sort_keys=True)


# ----------------------------------------------------------------------------- the step


@dataclass
class Dispatcher:
    session: Session
    task_id: str
    recipe: recipes.Recipe
    accept_recipe: bool = False
    dry_run: bool = False
    on_interrupt: Callable[[DispatchResult], None] | None = None

    def __post_init__(self) -> None:
        self.console = self.session.console
        self.env = self.session.env
        self.repo = discover(self.session.cwd, self.env)
        self.path = self.repo.inside(self.repo.root / taskfile.FILENAME)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        self.dispatch_id = f"{stamp}-{os.urandom(2).hex()}"
        self.run_dir = self.repo.state_dir / "dispatch" / "runs" / self.dispatch_id
        self.described = self.recipe.describe()
        self.attempts: list[Attempt] = []
        self.started = time.monotonic()
        self.started_at = telemetry.now()
        self.mode = "required"
        self.slot = memslot.SlotRead("skipped")
        self.phase = "starting"
        self._before: tuple[str, str | None, str] | None = None
        self.lock: Lock | None = None
        self.used = 0  # Codex runs of this dispatch before this process (a resumed dispatch)
        self.resumed: dict[str, Any] | None = None
        self._tasks_before: bytes | None = None  # TASKS.md as it was when Codex started
        self._ignored_before: snapshot.Ignored | None = None
        self.byproducts = Byproducts()
        self.codex_env: dict[str, str] = dict(self.env)

    @property
    def header(self) -> Header:
        return Header(
            self.dispatch_id,
            self.started_at,
            self.described["id"],
            self.described["fingerprint"],
            self.mode,
        )

    # -- preconditions --------------------------------------------------------------

    def _load(self) -> tuple[TaskFile, Task]:
        tf = taskfile.read(self.path)
        task = tf.get(self.task_id)
        if task is None:
            known = [t.id for t in tf.tasks]
            listing = ", ".join(known[:12]) + (" …" if len(known) > 12 else "")
            raise usage(
                f"{self.task_id} is not in {taskfile.FILENAME}"
                + (f" (tasks: {listing})" if known else ""),
                "check the id with: plan-build tasks",
            )
        return tf, task

    def _preconditions(self, tf: TaskFile, task: Task) -> None:
        related = _dependency_closure(tf, task)
        blocking = [
            p
            for p in tf.errors
            if p.task is None
            or p.task in related
            or "In Progress" in p.message
            or "dependency cycle" in p.message
        ]
        if blocking:
            lines = [p.human() for p in blocking[:10]]
            more = f"\n    … and {len(blocking) - 10} more" if len(blocking) > 10 else ""
            raise usage(
                f"{taskfile.FILENAME} has problems that stop {task.id}:\n    "
                + "\n    ".join(lines)
                + more,
                "fix those lines, then check with: plan-build tasks",
            )
        if task.status == COMPLETE:
            raise usage(
                f"{task.id} is already Complete",
                f"to run it again, set its Status to Pending in {taskfile.FILENAME} and say why",
            )
        for dep in task.dependencies:
            other = tf.get(dep)
            if other is not None and other.status != COMPLETE:
                raise usage(
                    f"{task.id} depends on {dep}, which is {other.status}",
                    f"finish {dep} first (plan-build dispatch {dep}), or correct the "
                    "Dependencies line",
                )
        running = [t for t in tf.tasks if t.status == IN_PROGRESS and t.id != task.id]
        if running:
            other = running[0]
            raise usage(
                f"{other.id} is In Progress; only one task may be",
                f"finish {other.id} first; if its dispatch was interrupted, resume it with: "
                f"plan-build dispatch {other.id}",
            )
        if task.status == BLOCKED:
            last = _read_task_state(self.repo, task.id).get("last") or {}
            if last.get("reason") in NEEDS_REVISION and last.get("digest") == tf.content_digest(
                task
            ):
                raise usage(
                    f"{task.id} is Blocked ({REASONS.get(last['reason'], last['reason'])}) and "
                    "has not changed since",
                    "revise its scope, prompt or acceptance criteria in TASKS.md (after the "
                    "user approves), then dispatch it again",
                )

    # -- prompts --------------------------------------------------------------------

    def _context(self, tf: TaskFile, task: Task) -> dict[str, Any]:
        spec = self.repo.root / "SPEC.md"
        project = project_identity(self.repo.root, self.env)
        return {
            "project": project,
            "memory_mode": self.mode,
            "slot": {
                "state": self.slot.state,
                "content": self.slot.content,
                "reason": self.slot.reason,
            },
            "tasks_ref": taskfile.FILENAME,
            "spec_ref": "SPEC.md" if spec.is_file() else None,
            "task": {
                "id": task.id,
                "title": task.title,
                "objective": task.body("objective").strip(),
                "context": task.body("context").strip(),
                "prompt": task.prompt.strip(),
                "acceptance": task.body("acceptance").strip(),
                "tests": task.body("tests").strip(),
            },
            "commands": [c.text for c in task.commands],
            "scope": list(task.scope),
            "scope_marker": SCOPE_MARKER,
            "checkpoint": checkpoint_summary(tf, task),
            "previous": {
                "count": len(task.blocks),
                "last_outcome": task.blocks[-1].outcome if task.blocks else None,
            },
        }

    def _render(self, name: str, context: Mapping[str, Any], *, refuse: bool) -> str:
        text = render(self.session.resources.templates, name, context)
        if refuse:
            findings = redact.scan(text, self.env)
            if findings:
                where = ", ".join(f"prompt line {f.line} ({f.kind})" for f in findings[:5])
                raise PlanBuildError(
                    f"the prompt for {self.task_id} contains what looks like a credential: {where}",
                    "remove the value from TASKS.md (name the variable instead) or from the "
                    "workflow_status slot, then dispatch again",
                    code=ExitCode.USAGE,
                )
        else:
            text, _ = redact.redact(text, self.env)
        if len(text.encode("utf-8")) > MAX_PROMPT_BYTES:
            raise usage(
                f"the prompt for {self.task_id} is {len(text.encode()) // 1024} KiB; "
                f"Codex takes at most {MAX_PROMPT_BYTES // 1024} KiB as an argument",
                "split the task or shorten its prompt and context",
            )
        return text

    def _argv(self, role: str, out: Path, prompt: str) -> list[str]:
        return ["codex", "exec", *self.recipe.codex_flags(role), "--json", "-o", str(out), prompt]

    # -- TASKS.md -------------------------------------------------------------------

    def _update(self, status: str | None, block: str) -> None:
        self.repo.inside(self.path)  # again: the tree may have changed while Codex ran
        text = taskfile.read(self.path).text
        if status is not None:
            text = taskfile.with_status(text, self.task_id, status)
        block = evidence_text(block, self.repo.root, self.session.home)
        text = taskfile.with_block(text, self.task_id, self.dispatch_id, block)
        atomic_write(self.path, text)

    # -- running ----------------------------------------------------------------------

    def _heartbeat(self, what: str) -> Callable[[float], None]:
        def beat(elapsed: float) -> None:
            self.console.say(f"  … {what} ({human_seconds(elapsed)})")

        return beat

    def _started(self, pgid: int) -> None:
        if self.lock is not None:
            self.lock.record_group(pgid)

    def _stderr_tail(self, stderr: str) -> str:
        """The last lines of Codex's stderr, for the console and the evidence: credentials
        withheld, paths relative to the repository, no home directory."""
        kept = [ln for ln in stderr.splitlines() if ln.strip() and not STDERR_NOISE.match(ln)]
        text = tail("\n".join(kept), STDERR_TAIL_LINES, STDERR_TAIL_CHARS)
        text, _ = redact.redact(text, self.env)
        return evidence_text(text, self.repo.root, self.session.home)

    def _tree(self) -> str:
        """The work tree without TASKS.md: plan-build owns that file during a dispatch and
        checks Codex's edits to it byte for byte (`_guard_tasks_md`)."""
        return snapshot.worktree_tree(self.repo, exclude=(*snapshot.TOOL_STATE, taskfile.FILENAME))

    def _tasks_bytes(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def _guard_tasks_md(self, attempt: Attempt | None) -> bool:
        """Undo Codex's edit of TASKS.md (restore the bytes from before its run); True when
        there was one."""
        before = self._tasks_before
        if before is None or self._tasks_bytes() == before:
            return False
        atomic_write(self.path, before)
        if attempt is not None:
            attempt.changed.append(taskfile.FILENAME)
            attempt.outside.append(taskfile.FILENAME)
            attempt.notes.append(
                f"`{taskfile.FILENAME}` was changed by Codex; plan-build owns it during a "
                "dispatch and restored its own version"
            )
        return True

    def _save_running(self, **fields: Any) -> None:
        state = _read_task_state(self.repo, self.task_id)
        running = state.get("running")
        if not isinstance(running, dict):
            running = {}
        _write_task_state(self.repo, self.task_id, {**state, "running": {**running, **fields}})

    def _resumable(self, task: Task) -> dict[str, Any] | None:
        """The saved state of this task's dispatch that died (SIGKILL, power loss) or was
        interrupted, when the task is still In Progress: the rerun continues it."""
        if task.status != IN_PROGRESS:
            return None
        running = _read_task_state(self.repo, task.id).get("running")
        if not isinstance(running, dict) or not isinstance(running.get("baseline_tree"), str):
            return None
        trees = [running["baseline_tree"]]
        before = running.get("before")
        if isinstance(before, list) and len(before) == 3:
            trees.append(str(before[0]))
        for tree in trees:
            if not self.repo.git("cat-file", "-e", f"{tree}^{{tree}}", check=False).ok:
                return None
        return running

    def _run_codex(self, attempt: Attempt, prompt: str) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        out = self.run_dir / f"attempt-{attempt.number}.last-message.md"
        with contextlib.suppress(FileNotFoundError):
            out.unlink()  # codex keeps an old file's content when it fails
        (self.run_dir / f"attempt-{attempt.number}.prompt.md").write_text(prompt, encoding="utf-8")
        argv = self._argv(attempt.role, out, prompt)
        started = time.monotonic()
        stdout = ""
        try:
            done = proc.run(
                argv,
                cwd=self.repo.root,
                env=self.codex_env,
                timeout=self.recipe.limits.codex_timeout_seconds,
                heartbeat=self._heartbeat(f"codex still working on {self.task_id}"),
                heartbeat_every=HEARTBEAT_EVERY,
                supervised=True,
                on_start=self._started,
            )
            attempt.codex_exit = done.returncode
            stdout = done.stdout
            (self.run_dir / f"attempt-{attempt.number}.stderr.txt").write_text(
                done.stderr, encoding="utf-8"
            )
            if done.returncode != 0 or not stdout.strip():
                attempt.stderr_tail = self._stderr_tail(done.stderr)
        except proc.CommandTimeout as exc:
            attempt.timed_out = True
            stdout = exc.stdout
        attempt.codex_seconds = time.monotonic() - started
        (self.run_dir / f"attempt-{attempt.number}.events.jsonl").write_text(
            stdout, encoding="utf-8"
        )
        attempt.events = telemetry.parse_events(stdout)
        try:
            message = out.read_text(encoding="utf-8", errors="replace")
        except OSError:
            message = ""
        attempt.final_message = message.strip() or (attempt.events.final_message or "")

    def _check_tree(
        self,
        attempt: Attempt,
        scope: Scope,
        before: tuple[str, str | None, str],
        ignored_before: snapshot.Ignored | None = None,
    ) -> None:
        tree_before, head_before, index_before = before
        after = self._tree()
        changed = snapshot.changed_paths(self.repo, tree_before, after)
        ignored: list[str] = []
        if ignored_before is not None:
            ignored = [
                p for p in snapshot.changed_ignored(self.repo, ignored_before) if p not in changed
            ]
        attempt.byproducts = [p for p in changed + ignored if self.byproducts.matches(p)]
        attempt.ignored = [p for p in ignored if not self.byproducts.matches(p)]
        attempt.changed = [p for p in changed if not self.byproducts.matches(p)] + attempt.ignored
        attempt.outside = [p for p in attempt.changed if not scope.allows(p)]
        # TASKS.md is the plan's record: never Codex's to change, whatever the globs say
        self._guard_tasks_md(attempt)
        head_after = self.repo.head()
        if head_after != head_before:
            attempt.git_moves.append(
                f"HEAD moved from {(head_before or 'none')[:12]} to {(head_after or 'none')[:12]}"
                " (a commit, reset or checkout)"
            )
        if snapshot.index_tree(self.repo) != index_before:
            attempt.git_moves.append("the index changed (something was staged or unstaged)")

    def _verify(self, task: Task) -> list[VerifyRun]:
        runs: list[VerifyRun] = []
        limit = self.recipe.limits.verification_timeout_seconds
        for cmd in task.commands:
            self.phase = f"verification ({cmd.text})"
            started = time.monotonic()
            try:
                done = proc.run(
                    list(cmd.argv),
                    cwd=self.repo.root,
                    env=self.env,
                    timeout=limit,
                    heartbeat=self._heartbeat(f"still running {cmd.text}"),
                    heartbeat_every=HEARTBEAT_EVERY,
                    supervised=True,
                    on_start=self._started,
                )
                run = VerifyRun(
                    cmd.text,
                    cmd.argv[0],
                    done.returncode,
                    done.seconds,
                    False,
                    _combine(done.stdout, done.stderr),
                    limit,
                )
            except proc.CommandTimeout as exc:
                run = VerifyRun(
                    cmd.text, cmd.argv[0], None, time.monotonic() - started, True, exc.stdout, limit
                )
            except proc.CommandNotFound:
                run = VerifyRun(
                    cmd.text,
                    cmd.argv[0],
                    None,
                    time.monotonic() - started,
                    False,
                    f"{cmd.argv[0]}: command not found",
                    limit,
                )
            except PlanBuildError as exc:  # not executable
                run = VerifyRun(
                    cmd.text, cmd.argv[0], None, time.monotonic() - started, False, exc.what, limit
                )
            runs.append(run)
            mark = self.console.mark("pass" if run.passed else "fail")
            tail = (
                ""
                if run.passed
                else (
                    f"  stopped after {limit}s"
                    if run.timed_out
                    else f"  exit {run.returncode}"
                    if run.returncode is not None
                    else "  not started"
                )
            )
            self.console.say(f"  {mark} {cmd.text}{tail} ({human_seconds(run.seconds)})")
            if run.timed_out:
                break  # a hung check says enough; later ones would wait as long
        return runs

    def _classify(self, attempt: Attempt) -> str | None:
        """The reason this attempt ends the dispatch before verification, if any."""
        if attempt.outside:
            return "scope"
        if attempt.git_moves:
            return "git_state"
        if attempt.events.sandbox_errors:
            return "sandbox_unavailable"  # no correction can help; nothing could run
        if attempt.timed_out:
            return "codex_timeout"
        if attempt.codex_exit != 0:
            return "codex_failed"
        if attempt.events.events == 0:
            return "no_events"
        if any(ln.strip().startswith(SCOPE_MARKER) for ln in attempt.final_message.splitlines()):
            return "scope_requested"
        return None

    def _attempt_record(self, task: Task, a: Attempt) -> dict[str, Any]:
        return {
            "kind": "attempt",
            "at": telemetry.now(),
            "dispatch": self.dispatch_id,
            "task": task.id,
            "recipe": {"id": self.described["id"], "fingerprint": self.described["fingerprint"]},
            "memory_mode": self.mode,
            **{k: v for k, v in a.as_json().items() if k not in ("changed", "outside_scope")},
            "verification": None
            if a.verification is None
            else {
                "passed": a.verified,
                "commands": [
                    {
                        "program": os.path.basename(v.program),
                        "exit": v.returncode,
                        "seconds": round(v.seconds, 3),
                        "timed_out": v.timed_out,
                    }
                    for v in a.verification
                ],
            },
            "changed_files": len(a.changed),
            "outside_scope": len(a.outside),
        }

    def _dispatch_record(self, task: Task, status: str, reason: str) -> dict[str, Any]:
        return {
            "kind": "dispatch",
            "at": telemetry.now(),
            "dispatch": self.dispatch_id,
            "task": task.id,
            "recipe": {"id": self.described["id"], "fingerprint": self.described["fingerprint"]},
            "memory_mode": self.mode,
            "slot": self.slot.state,
            "outcome": status,
            "reason": reason,
            "attempts": self.attempts[-1].number if self.attempts else 0,
            "corrections": max(0, (self.attempts[-1].number if self.attempts else 0) - 1),
            "exhausted": reason == "corrections_exhausted",
            "seconds": round(time.monotonic() - self.started, 3),
            "tokens": telemetry.sum_tokens(a.events.tokens for a in self.attempts)
            if self.attempts
            else telemetry.UNKNOWN,
        }

    def run(self) -> DispatchResult:
        tf, task = self._load()
        self._preconditions(tf, task)
        if proc.which("codex", self.env) is None:
            raise proc.CommandNotFound("codex")
        self.mode = memory_mode(self.env)
        self.codex_env = self._codex_env()
        if not self.dry_run:
            recipes.check_pinned(
                self.repo.state_dir, self.recipe, accept=self.accept_recipe, task_id=task.id
            )
        if self.mode == "required":
            self.slot = memslot.read_slot(SLOT_LABEL, self.env, self.session.home)
            owner = memslot.named_project(self.slot.content or "")
            project = project_identity(self.repo.root, self.env)["id"]
            if owner and project and owner != project:
                # one label for every project (ADR 0021): never pass on another project's state
                self.slot = memslot.SlotRead("foreign", reason=owner)
            if self.slot.state == "unavailable":
                self.console.say(
                    f"plan-build: warning: the workflow_status checkpoint is unavailable "
                    f"({self.slot.reason}); the prompt says so"
                )
        prompt = self._render("codex/task.md.j2", self._context(tf, task), refuse=True)
        if self.dry_run:
            return self._dry_run(task, prompt)

        lock = Lock(self.repo.state_dir / "dispatch" / "lock", task.id)
        stopped = lock.acquire()
        self.lock = lock
        if stopped:
            self.console.say(
                f"plan-build: stopped {len(stopped)} process"
                f"{'es' if len(stopped) != 1 else ''} a dead dispatch left running "
                f"(pids {', '.join(map(str, stopped[:8]))})"
            )
        try:
            with interrupts.stopping():
                return self._loop(tf, task, prompt)
        finally:
            lock.release()

    def _codex_env(self) -> dict[str, str]:
        """The session's environment plus the memory scope the prompt promises Codex: the
        committed identity, the memory mode and whether context is injected. An inherited
        AGENTMEMORY_PROJECT_NAME that names another project is refused (exit 3)."""
        from plan_build.agentmemory import memory_env

        ident = project_identity(self.repo.root, self.env)
        inherited = self.env.get("AGENTMEMORY_PROJECT_NAME")
        value = ident["id"]
        if ident["source"] == ".agentmemory-project" and inherited and inherited != value:
            raise PlanBuildError(
                f"AGENTMEMORY_PROJECT_NAME is {inherited!r}, but this repository's identity "
                f"(.agentmemory-project) is {value!r}: Codex would write memory into another "
                "project",
                "run dispatch from a session launched in this repository (plan-build "
                "architect), or unset AGENTMEMORY_PROJECT_NAME",
                code=ExitCode.PREFLIGHT,
            )
        if not value:
            return dict(self.env)
        return {**self.env, **memory_env(value, degraded=self.mode == "degraded")}

    def _dry_run(self, task: Task, prompt: str) -> DispatchResult:
        out = self.run_dir / "attempt-1.last-message.md"
        argv = self._argv(recipes.IMPLEMENTER, out, "<prompt>")
        write = self.session.stdout.write
        write(f"argv: {proc.quote(argv)}\n")
        write("--- prompt " + "-" * 60 + "\n")
        write(prompt if prompt.endswith("\n") else prompt + "\n")
        write("-" * 71 + "\n")
        write(f"would dispatch {task.id} (status {task.status} → In Progress)\n")
        return DispatchResult(
            task.id,
            self.dispatch_id,
            task.status or PENDING,
            "dry_run",
            [],
            [],
            0.0,
            self.described,
            dry_run=True,
        )

    def _load_byproducts(self) -> Byproducts:
        from plan_build import config

        extra = config.load(self.repo.root).get("dispatch.byproducts", []) or []
        for pattern in extra:
            why = byproduct_problem(pattern)
            if why:
                raise usage(
                    f"{config.FILENAME}: dispatch.byproducts entry {pattern!r} {why}",
                    "use globs such as `.cache/` or `*.log`, relative to the repository root",
                )
        return Byproducts((*DEFAULT_BYPRODUCTS, *extra))

    def _begin(self, task: Task) -> tuple[Scope, str]:
        """Resume or start: the messages, Status In Progress, the saved running state."""
        scope = Scope(task.scope)
        self.byproducts = self._load_byproducts()
        self.resumed = self._resumable(task)
        if self.resumed is not None:
            # the same dispatch goes on: its id, its baseline, its budget of Codex runs
            self.dispatch_id = str(self.resumed.get("dispatch") or self.dispatch_id)
            self.run_dir = self.repo.state_dir / "dispatch" / "runs" / self.dispatch_id
            self.started_at = str(self.resumed.get("started") or self.started_at)
            used = self.resumed.get("attempts")
            self.used = used if isinstance(used, int) and used >= 0 else 0
        self.console.say(
            f"dispatching {task.id} “{task.title}” · recipe {self.described['id']} · "
            f"memory {self.mode}"
        )
        if self.resumed is not None:
            self.console.say(
                f"  resuming dispatch {self.dispatch_id}: {self.used} of "
                f"{1 + self.recipe.limits.max_corrections} Codex runs used; changes are "
                "checked against its baseline"
            )
        for pattern in scope.unmatched(repo_files(self.repo)):
            self.console.say(f"  note: scope entry `{pattern}` matches no file yet")
        # the baseline comes before the status changes: if the snapshot fails, nothing did
        baseline = str(self.resumed["baseline_tree"]) if self.resumed else self._tree()
        self._update(
            IN_PROGRESS,
            running_block(self.header, task.id, self.used + 1, recipes.IMPLEMENTER, os.getpid()),
        )
        if self.resumed is not None:
            self._save_running(pid=os.getpid())
        else:
            state = _read_task_state(self.repo, task.id)
            state["running"] = {
                "dispatch": self.dispatch_id,
                "pid": os.getpid(),
                "baseline_tree": baseline,
                "started": self.started_at,
                "attempts": 0,
            }
            _write_task_state(self.repo, task.id, state)
        return scope, baseline

    def _loop(self, tf: TaskFile, task: Task, prompt: str) -> DispatchResult:
        scope, baseline = self._begin(task)
        status, reason = BLOCKED, "interrupted"
        try:
            status, reason = self._attempts(tf, task, scope, prompt)
        except PlanBuildError as exc:
            if isinstance(exc, proc.CommandCancelled):
                self._interrupted(task, exc)
            else:  # a failed snapshot, an unwritable state dir: never leave it In Progress
                self._failed(task, exc)
            raise
        except BaseException as exc:
            self._interrupted(task, exc)
            if self.on_interrupt is not None and isinstance(exc, KeyboardInterrupt):
                with contextlib.suppress(Exception):
                    self.on_interrupt(self._result(IN_PROGRESS, "interrupted", []))
            raise
        try:
            since = snapshot.changed_paths(self.repo, baseline, self._tree())
        except PlanBuildError:
            since = [p for a in self.attempts for p in a.changed if p not in a.ignored]
        changed = [p for p in dict.fromkeys(since) if not self.byproducts.matches(p)]
        for a in self.attempts:
            changed.extend(p for p in a.ignored if p not in changed)
        if any(taskfile.FILENAME in a.changed for a in self.attempts):
            changed.append(f"{taskfile.FILENAME} (Codex's edit undone)")
        block = final_block(
            self.header,
            task_id=task.id,
            status=status,
            reason=reason,
            attempts=self.attempts,
            max_attempts=1 + self.recipe.limits.max_corrections,
            changed=changed,
            seconds=time.monotonic() - self.started,
            env=self.env,
        )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        block = evidence_text(block, self.repo.root, self.session.home)
        (self.run_dir / "evidence.md").write_text(block, encoding="utf-8")
        digest = None
        try:
            self._update(status, block)
            fresh = taskfile.read(self.path)
            fresh_task = fresh.get(task.id)
            digest = fresh.content_digest(fresh_task) if fresh_task else None
        except PlanBuildError as exc:
            self.console.say(
                f"plan-build: warning: could not record the outcome in {taskfile.FILENAME} "
                f"({exc.what}); the evidence is in {self.run_dir / 'evidence.md'}"
            )
        last = {"dispatch": self.dispatch_id, "status": status, "reason": reason}
        _write_task_state(
            self.repo, task.id, {"last": {**last, "digest": digest, "at": telemetry.now()}}
        )
        telemetry.append(self.repo.state_dir, self._dispatch_record(task, status, reason))
        self._report(task, status, reason)
        return self._result(status, reason, changed)

    def _result(self, status: str, reason: str, changed: list[str]) -> DispatchResult:
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
        self.phase = f"attempt {self.used} (scope check)"
        ignored = snapshot.Ignored.from_json(running.get("ignored"))
        self._check_tree(dead, scope, (str(before[0]), before[1], str(before[2])), ignored)
        self._say_attempt(dead)
        stop = "scope" if dead.outside else "git_state" if dead.git_moves else None
        if stop is None and self.used >= 1 + self.recipe.limits.max_corrections:
            dead.verification = self._verify(task)
            stop = "verified" if dead.verified else "corrections_exhausted"
        if stop is None:
            return None
        dead.outcome = stop
        telemetry.append(self.repo.state_dir, self._attempt_record(task, dead))
        return (REVIEW if stop == "verified" else BLOCKED), stop

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
                prompt = self._correction_prompt(tf, task, number - 1, failures)
            r = self.recipe.role(role)
            attempt = Attempt(number, role, r.model, r.reasoning)
            self.attempts.append(attempt)
            if number > self.used + 1:
                self._update(None, running_block(self.header, task.id, number, role, os.getpid()))
            before = (self._tree(), self.repo.head(), snapshot.index_tree(self.repo))
            self._before = before
            self._ignored_before = snapshot.ignored_files(self.repo)
            self._save_running(
                attempts=number,
                role=role,
                before=list(before),
                ignored=self._ignored_before.as_json()
                if len(self._ignored_before.files) <= MAX_SAVED_IGNORED
                else None,
            )
            self.console.say(f"  attempt {number} · {role} ({r.model}, {r.reasoning}) …")
            self.phase = f"attempt {number} (codex)"
            self._tasks_before = self._tasks_bytes()
            self._run_codex(attempt, prompt)
            self.phase = f"attempt {number} (scope check)"
            self._check_tree(attempt, scope, before, self._ignored_before)
            self._tasks_before = None
            self._say_attempt(attempt)
            stop = self._classify(attempt)
            if stop is not None:
                attempt.outcome = stop
                telemetry.append(self.repo.state_dir, self._attempt_record(task, attempt))
                return BLOCKED, stop
            attempt.verification = self._verify(task)
            if attempt.verified:
                attempt.outcome = "verified"
                telemetry.append(self.repo.state_dir, self._attempt_record(task, attempt))
                return REVIEW, "verified"
            attempt.outcome = "verification_failed"
            idle = idle + 1 if self._no_change(attempt) else 0
            telemetry.append(self.repo.state_dir, self._attempt_record(task, attempt))
            failures = [v for v in attempt.verification if not v.passed]
            corrections_used = number - 1
            # a correction only when a verification can still follow it (it always does here:
            # every attempt is verified), and never past the recipe's cap
            if corrections_used >= limits.max_corrections:
                return BLOCKED, "corrections_exhausted"
            if idle >= NO_CHANGE_LIMIT:  # early: more runs of an idle Codex change nothing
                return BLOCKED, "no_change"

    def _no_change(self, attempt: Attempt) -> bool:
        """A failed attempt that changed nothing is not a failing fix: say so, quoting Codex."""
        if attempt.changed:
            return False
        attempt.outcome = "no_change"
        said = one_line(redact.redact(attempt.final_message, self.env)[0] or "nothing")
        attempt.notes.append(f"Codex made no change; it said: “{said}”")
        self.console.say(f"    Codex made no change; it said: “{said}”")
        return True

    def _correction_prompt(
        self, tf: TaskFile, task: Task, correction: int, failures: list[VerifyRun]
    ) -> str:
        changed: list[str] = []
        for a in self.attempts:
            changed.extend(p for p in a.changed if p not in changed)
        context = {
            **self._context(tf, task),
            "correction": correction,
            "max_corrections": self.recipe.limits.max_corrections,
            "changed": changed,
            "failures": [
                {
                    "command": f.text,
                    "exit": f.returncode,
                    "timed_out": f.timed_out,
                    "timeout": f.timeout,
                    "output": tail(f.output, PROMPT_TAIL_LINES, PROMPT_TAIL_CHARS),
                }
                for f in failures
            ],
        }
        return self._render("codex/correction.md.j2", context, refuse=False)

    def _say_attempt(self, a: Attempt) -> None:
        if a.timed_out:
            head = f"codex stopped after {human_seconds(a.codex_seconds)} (time limit)"
        else:
            head = f"codex exit {a.codex_exit} in {human_seconds(a.codex_seconds)}"
        files = f"{len(a.changed)} file{'s' if len(a.changed) != 1 else ''} changed"
        if a.outside:
            files += f", {len(a.outside)} outside the scope"
        elif a.changed:
            files += ", all in scope"
        if a.byproducts:
            files += f" (+{len(a.byproducts)} check by-products)"
        self.console.say(f"    {head} · {files}")
        for line in a.stderr_tail.splitlines():
            self.console.say(f"    codex: {line}")

    def _interrupted(self, task: Task, exc: BaseException) -> None:
        """Ctrl-C, a termination signal or an error mid-dispatch: keep In Progress, say how to
        resume."""
        if isinstance(exc, KeyboardInterrupt):
            what = interrupts.signal_name(exc)
        else:
            what = f"an error ({exc})"
        stopped = (
            "Codex and its processes were stopped"
            if self.phase.endswith("(codex)")
            else "the running command was stopped"
        )
        outside: list[str] = []
        before = self._before
        if before is not None and self.phase.endswith("(codex)"):
            with contextlib.suppress(Exception):
                if self._guard_tasks_md(None):
                    outside.append(f"{taskfile.FILENAME} (Codex's edit undone)")
            with contextlib.suppress(Exception):
                after = self._tree()
                changed = snapshot.changed_paths(self.repo, before[0], after)
                changed = [p for p in changed if not self.byproducts.matches(p)]
                outside = Scope(task.scope).outside(changed) + outside
        lines = [
            self.header.line(),
            f"Outcome: In Progress · interrupted by {one_line(what)} during {self.phase}; "
            f"{stopped}",
        ]
        for a in self.attempts[:-1]:
            lines.extend(attempt_lines(a, self.env))
        if outside:
            lines.append(
                "- Changed outside the scope before the stop: "
                + ", ".join(f"`{p}`" for p in outside)
            )
        lines.append(
            f"- Resume: review the work tree (every change is kept), then rerun "
            f"`plan-build dispatch {task.id}`; or set Status to Blocked to stop here."
        )
        with contextlib.suppress(Exception):
            self._update(None, "\n".join(lines) + "\n")
        with contextlib.suppress(Exception):
            record = self._dispatch_record(task, IN_PROGRESS, "interrupted")
            record["outside_scope"] = len(outside)
            telemetry.append(self.repo.state_dir, record)

    def _failed(self, task: Task, exc: PlanBuildError) -> None:
        """plan-build itself failed mid-dispatch: the task becomes Blocked (reason `error`)
        with the message, so it is never left In Progress by a failure that repeats."""
        lines = [
            self.header.line(),
            f"Outcome: Blocked · plan-build stopped during {self.phase}: "
            f"{one_line(evidence_text(exc.what, self.repo.root, self.session.home))}",
        ]
        for a in self.attempts:
            lines.extend(attempt_lines(a, self.env))
        lines.append(f"- Next: {next_step(BLOCKED, 'error', task.id)}")
        with contextlib.suppress(Exception):
            self._update(BLOCKED, "\n".join(lines) + "\n")
        with contextlib.suppress(Exception):
            last = {"dispatch": self.dispatch_id, "status": BLOCKED, "reason": "error"}
            _write_task_state(self.repo, task.id, {"last": {**last, "at": telemetry.now()}})
        with contextlib.suppress(Exception):
            telemetry.append(self.repo.state_dir, self._dispatch_record(task, BLOCKED, "error"))

    def _report(self, task: Task, status: str, reason: str) -> None:
        arrow = self.console.arrow()
        if status == REVIEW:
            self.console.say(
                f"{task.id} {arrow} Review · verified on attempt {self.attempts[-1].number} · "
                f"evidence in {taskfile.FILENAME}"
            )
        else:
            self.console.say(f"{task.id} {arrow} Blocked · {REASONS.get(reason, reason)}")
            last = self.attempts[-1] if self.attempts else None
            if last and last.outside:
                for p in last.outside:
                    self.console.say(f"    outside the scope: {p}")
                self.console.say("    the diff is left in the work tree for you to decide")
        self.console.say(f"  next: {next_step(status, reason, task.id)}")


def evidence_text(text: str, root: Path, home: Path | None) -> str:
    """Text for TASKS.md (a committed file): paths relative to the repository, never the
    home directory."""
    text = text.replace(str(root) + os.sep, "").replace(str(root), ".")
    if home is not None and str(home) not in ("", "/"):
        text = text.replace(str(home), "~")
    return text


def _combine(stdout: str, stderr: str) -> str:
    if stdout.strip() and stderr.strip():
        return stdout.rstrip("\n") + "\n" + stderr
    return stdout or stderr


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
    tid = normalise_id(task_id)
    return Dispatcher(
        session,
        tid,
        recipe or recipes.current(),
        accept_recipe=accept_recipe,
        dry_run=dry_run,
        on_interrupt=on_interrupt,
    ).run()
