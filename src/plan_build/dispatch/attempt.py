"""One Codex run and what it changed: the run, the work-tree, ignored-path, HEAD and index
checks after it, the undo of a TASKS.md edit, and the reason (scope, git state, sandbox, time
limit...) it ends the dispatch before verification."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from plan_build.core import checkpoint, proc, redact, snapshot
from plan_build.core.errors import PlanBuildError
from plan_build.core.fsutil import atomic_write
from plan_build.core.gitrepo import Repo
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch import taskfile, telemetry
from plan_build.dispatch.evidence import evidence_text, one_line, tail
from plan_build.dispatch.prompts import codex_argv
from plan_build.dispatch.results import SCOPE_MARKER, Attempt
from plan_build.dispatch.scope import Byproducts, Scope

HEARTBEAT_EVERY = 30.0
STDERR_TAIL_LINES = 8
STDERR_TAIL_CHARS = 1_500
# lines every codex run prints that say nothing about why it failed
STDERR_NOISE = re.compile(r"Reading additional input from stdin|Stack backtrace:|\s+\d+: ")

Before = tuple[str, str | None, str]  # work tree (without TASKS.md), HEAD, index tree


def tree(repo: Repo) -> str:
    """The work tree without TASKS.md: plan-build owns that file during a dispatch and
    checks Codex's edits to it byte for byte (TasksGuard)."""
    return snapshot.worktree_tree(repo, exclude=(*snapshot.TOOL_STATE, taskfile.FILENAME))


def refs(repo: Repo) -> str:
    """Every ref of the repository (shared by all its worktrees) and this work tree's HEAD,
    as one text: a wave task's Codex must move none of them. plan-build's own refs (session
    baselines) are left out: plan-build moves them itself."""
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)").stdout
    kept = [ln for ln in out.splitlines() if not ln.startswith("refs/plan-build/")]
    head = repo.git("symbolic-ref", "-q", "HEAD", check=False).stdout.strip()
    return "\n".join([f"HEAD {head or '-'} {repo.head() or '-'}", *kept])


def refs_moved(old: str, new: str) -> list[str]:
    """One line per ref that moved, appeared or disappeared between two `refs` texts."""
    a = dict(ln.split(" ", 1) for ln in old.splitlines() if " " in ln)
    b = dict(ln.split(" ", 1) for ln in new.splitlines() if " " in ln)
    out = []
    for name in sorted(a.keys() | b.keys()):
        if a.get(name) != b.get(name):
            was, now = a.get(name, "none"), b.get(name, "none")
            out.append(f"{name} moved from {was[:80]} to {now[:80]}")
    return out


def check_refs(repo: Repo, before: str, attempt: Attempt) -> None:
    """Record in `attempt` every ref of `repo` that moved since `before` (a `refs` text)."""
    moved = refs_moved(before, refs(repo))
    attempt.git_moves += [
        f"the repository's {m} while this Codex ran (every worktree shares its refs: this "
        "task moved it, or a task of the wave running beside it did)"
        for m in moved
    ]


def before(repo: Repo) -> Before:
    return (tree(repo), repo.head(), snapshot.index_tree(repo))


class TasksGuard:
    """TASKS.md as it was when Codex started, to undo any edit Codex makes to it; the edited
    file is kept in the run folder, so undoing it loses nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.before: bytes | None = None
        self.keep: Path | None = None  # where the undone version goes
        self.by = "by Codex"  # who the note says made the edit

    def _bytes(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def arm(self, saved: Path | None = None) -> None:
        """Take the bytes before a Codex run; with `saved`, also write them there, for a
        dispatch that resumes after this one dies to compare against (`expect`)."""
        self.before = self._bytes()
        self.by = "by Codex"
        if saved is not None:
            self.keep = saved.parent / f"{saved.name}.undone"
            if self.before is not None:
                saved.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(saved, self.before)

    def resume(self, saved: Path, task_id: str, dispatch_id: str) -> None:
        """A resumed dispatch: expect the bytes saved when the stopped Codex run began, with
        the task's Status and this dispatch's block as plan-build has written them since;
        anything else is an edit made in between. Nothing saved, nothing to compare."""
        try:
            old = saved.read_bytes()
        except OSError:
            return
        expected, now = old, self._bytes()
        if now is not None:
            with contextlib.suppress(UnicodeDecodeError):
                text = taskfile.with_own_lines(old.decode(), now.decode(), task_id, dispatch_id)
                expected = text.encode()
        self.before, self.keep = expected, saved.parent / f"{saved.name}.undone"
        self.by = "after the stopped Codex run began (by Codex or by hand)"

    def disarm(self) -> None:
        self.before = None

    def undo(self, attempt: Attempt | None) -> bool:
        """Restore the bytes from before Codex's run; True when Codex had changed them."""
        before = self.before
        now = self._bytes()
        if before is None or now == before:
            return False
        kept = ""
        if self.keep is not None and now is not None:
            with contextlib.suppress(OSError):
                atomic_write(self.keep, now)
                kept = f" (the edited file is kept in the run folder as {self.keep.name})"
        atomic_write(self.path, before)
        if attempt is not None:
            attempt.changed.append(taskfile.FILENAME)
            attempt.outside.append(taskfile.FILENAME)
            attempt.notes.append(
                f"`{taskfile.FILENAME}` was changed {self.by}; plan-build owns it during a "
                f"dispatch and restored its own version{kept}"
            )
        return True


def stderr_tail(stderr: str, env: Mapping[str, str], root: Path, home: Path | None) -> str:
    """The last lines of Codex's stderr, for the console and the evidence: credentials
    withheld, paths relative to the repository, no home directory."""
    kept = [ln for ln in stderr.splitlines() if ln.strip() and not STDERR_NOISE.match(ln)]
    text = tail("\n".join(kept), STDERR_TAIL_LINES, STDERR_TAIL_CHARS)
    text, _ = redact.redact(text, env)
    return evidence_text(text, root, home)


def run_codex(
    attempt: Attempt,
    prompt: str,
    *,
    recipe: recipes.Recipe,
    run_dir: Path,
    root: Path,
    codex_env: Mapping[str, str],
    env: Mapping[str, str],
    home: Path | None,
    heartbeat: Callable[[float], None],
    on_start: Callable[[int], None],
    cancel: threading.Event | None = None,
    on_line: Callable[[str], None] | None = None,
    extra: Sequence[str] = (),
) -> None:
    """Run Codex for `attempt` (supervised, with the recipe's time limit) and record its exit,
    time, events and final message; its files go to `run_dir`. `env` is the session's, for
    withholding credentials from the stderr tail."""
    run_dir.mkdir(parents=True, exist_ok=True)
    out = run_dir / f"attempt-{attempt.number}.last-message.md"
    with contextlib.suppress(FileNotFoundError):
        out.unlink()  # codex keeps an old file's content when it fails
    (run_dir / f"attempt-{attempt.number}.prompt.md").write_text(prompt, encoding="utf-8")
    argv = codex_argv(recipe, attempt.role, out, prompt, extra)
    checkpoint.before_run(root, env, f"before Codex attempt {attempt.number}")
    # the `--json` stream goes straight to the run folder and is read from there a line at a
    # time: it can be large (every command's output), and is never held whole in memory
    events = events_path(run_dir, attempt.number)
    started = time.monotonic()
    try:
        done = proc.run(
            argv,
            cwd=root,
            env=codex_env,
            timeout=recipe.limits.codex_timeout_seconds,
            heartbeat=heartbeat,
            heartbeat_every=HEARTBEAT_EVERY,
            supervised=True,
            on_start=on_start,
            stdout_file=events,
            cancel=cancel,
            on_line=on_line,
        )
        attempt.codex_exit = done.returncode
        (run_dir / f"attempt-{attempt.number}.stderr.txt").write_text(done.stderr, encoding="utf-8")
        if done.returncode != 0 or _blank(events):
            attempt.stderr_tail = stderr_tail(done.stderr, env, root, home)
    except proc.CommandTimeout:
        attempt.timed_out = True
    attempt.codex_seconds = time.monotonic() - started
    attempt.events = events_of(run_dir, attempt.number)
    try:
        message = out.read_text(encoding="utf-8", errors="replace")
    except OSError:
        message = ""
    attempt.final_message = message.strip() or (attempt.events.final_message or "")


def events_path(run_dir: Path, number: int) -> Path:
    return run_dir / f"attempt-{number}.events.jsonl"


def events_of(run_dir: Path, number: int) -> telemetry.CodexEvents:
    """What Codex's run `number` printed, read from its stream file (none: nothing)."""
    return telemetry.parse_file(events_path(run_dir, number))


def _blank(path: Path) -> bool:
    """Codex printed nothing but white space (read in bounded pieces)."""
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(65536):
                if chunk.strip():
                    return False
    except OSError:
        pass
    return True


def check_tree(
    repo: Repo,
    attempt: Attempt,
    scope: Scope,
    before: Before,
    ignored_before: snapshot.Ignored | None,
    *,
    byproducts: Byproducts,
    guard: TasksGuard,
) -> None:
    """Record what changed since `before` (tracked, untracked and ignored paths, check
    by-products apart), what of it is outside the scope, and any move of HEAD or the index."""
    tree_before, head_before, index_before = before
    after = tree(repo)
    changed = snapshot.changed_paths(repo, tree_before, after)
    ignored: list[str] = []
    if ignored_before is not None:
        ignored = [p for p in snapshot.changed_ignored(repo, ignored_before) if p not in changed]
    attempt.byproducts = [p for p in changed + ignored if byproducts.matches(p)]
    attempt.ignored = [p for p in ignored if not byproducts.matches(p)]
    attempt.changed = [p for p in changed if not byproducts.matches(p)] + attempt.ignored
    attempt.outside = [p for p in attempt.changed if not scope.allows(p)]
    # TASKS.md is the plan's record: never Codex's to change, whatever the globs say
    guard.undo(attempt)
    head_after = repo.head()
    if head_after != head_before:
        attempt.git_moves.append(
            f"HEAD moved from {(head_before or 'none')[:12]} to {(head_after or 'none')[:12]}"
            " (a commit, reset or checkout)"
        )
    if snapshot.index_tree(repo) != index_before:
        attempt.git_moves.append("the index changed (something was staged or unstaged)")


def classify(attempt: Attempt) -> str | None:
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


def no_change(attempt: Attempt, env: Mapping[str, str]) -> str | None:
    """A failed attempt that changed nothing is not a failing fix: the line that says so,
    quoting Codex (also kept as a note in the evidence); None when it changed something."""
    if attempt.changed:
        return None
    attempt.outcome = "no_change"
    said = one_line(redact.redact(attempt.final_message, env)[0] or "nothing")
    line = f"Codex made no change; it said: “{said}”"
    attempt.notes.append(line)
    return line


def outside_at_stop(
    repo: Repo, scope: Scope, before: Before, *, byproducts: Byproducts, guard: TasksGuard
) -> list[str]:
    """What a Codex run stopped mid-way (Ctrl-C, a signal, an error) had changed outside the
    scope, TASKS.md's undone edit included; best effort, as the stop must go on."""
    outside: list[str] = []
    with contextlib.suppress(Exception):
        if guard.undo(None):
            outside.append(f"{taskfile.FILENAME} (Codex's edit undone)")
    with contextlib.suppress(Exception):
        changed = snapshot.changed_paths(repo, before[0], tree(repo))
        changed = [p for p in changed if not byproducts.matches(p)]
        outside = scope.outside(changed) + outside
    return outside


def dispatch_changes(
    repo: Repo, baseline: str, attempts: list[Attempt], byproducts: Byproducts
) -> list[str]:
    """Every path the dispatch changed since its baseline (check by-products apart), ignored
    paths included, and a note when Codex's TASKS.md edit was undone."""
    try:
        since = snapshot.changed_paths(repo, baseline, tree(repo))
    except PlanBuildError:
        since = [p for a in attempts for p in a.changed if p not in a.ignored]
    changed = [p for p in dict.fromkeys(since) if not byproducts.matches(p)]
    for a in attempts:
        changed.extend(p for p in a.ignored if p not in changed)
    if any(taskfile.FILENAME in a.changed for a in attempts):
        changed.append(f"{taskfile.FILENAME} (Codex's edit undone)")
    return changed
