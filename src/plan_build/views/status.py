"""`plan-build status`: where the session stands, on one screen, and the same facts as JSON.

It reads records only (baseline, review workflow files, TASKS.md and dispatch state, the
verify record) and takes the work tree once, through the session's kept index; it starts no
reviewer and re-runs no check. "Missing before commit" is `commit`'s own judgement
(`delivery.readiness`, in commit's order) asked of the facts gathered here, so what the screen
says is missing is what `commit` would refuse for, and nothing else (ADR 0185).
"""

from __future__ import annotations

import textwrap
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_build.core import codexusage
from plan_build.core.gitrepo import Repo
from plan_build.delivery import baseline as baseline_mod
from plan_build.views import progress
from plan_build.views.missing import COMMIT, RepoNow, judged, repo_now, what_is_missing
from plan_build.views.session import SessionFacts, guard_text
from plan_build.views.session import gather as gather_session

if TYPE_CHECKING:
    from plan_build.core.context import Session
    from plan_build.views import reviews

FORMAT = 1
MAX_LINES = 30
WIDTH = 100
MAX_USAGE = 4  # tasks whose token use the screen names (all of them in --json)
MAX_FILES = 12  # the change's files shown before "and N more" (fewer when the screen is full)


@dataclass(frozen=True)
class StatusFacts:
    session: SessionFacts
    review: reviews.ReviewFacts
    tasks: progress.TaskFacts
    verify: progress.VerifyFacts
    busy: str | None  # an unfinished git operation (a merge, a rebase)
    missing: tuple[str, ...]
    next: str  # the one command to run next (or what to do, when no command does it)
    # verify commands that differ from the ones committed at the baseline (an agent may have
    # written them): named before they run at the user's terminal (ADR 0190)
    changed_commands: tuple[str, ...] = ()
    last_checkpoint: str | None = None  # when the work tree was last checkpointed (ADR 0198)

    @property
    def ready(self) -> bool:
        return self.session.committed is None and not self.missing


class _Beside(threading.Thread):
    """Python work (parsing TASKS.md, loading the review rules) done while the main thread
    waits for git to take the work tree: `status` costs little more than it did."""

    def __init__(self, work: Callable[[], tuple[progress.TaskFacts, RepoNow]]) -> None:
        super().__init__(name="status-records", daemon=True)
        self.work = work
        self.result = (progress.TaskFacts(), RepoNow())
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.work()
        except BaseException as exc:  # handed to the main thread, raised there
            self.error = exc

    def get(self) -> tuple[progress.TaskFacts, RepoNow]:
        self.join()
        if self.error is not None:
            raise self.error
        return self.result


def _records(repo: Repo) -> tuple[progress.TaskFacts, RepoNow]:
    repo.names  # noqa: B018  (its `git config` runs here, beside the main thread's rev-parse)
    from plan_build.views import reviews  # noqa: F401  (loaded here, used after the snapshot)

    return progress.tasks(repo), repo_now(repo)


def gather(repo: Repo, env: Mapping[str, str], cwd: Path) -> StatusFacts:
    beside = _Beside(lambda: _records(repo))
    beside.start()
    try:
        s = gather_session(repo, env)
    except BaseException:
        beside.join()  # never left running behind an error
        raise
    t, now = beside.get()
    from plan_build.views import reviews

    tree = s.change.tree if s.change is not None and not s.committed else None
    r = reviews.gather(repo, env, cwd, tree=tree, since=s.started_at, approval=s.committed is None)
    v = progress.verification(repo, s.id, tree)
    busy = None if s.committed else baseline_mod.busy_state(repo)
    missing, nxt = what_is_missing(s, r, t, judged(repo, s, r, busy, now))
    from plan_build.core import checkpoint

    return StatusFacts(
        s, r, t, v, busy, missing, nxt, _changed_commands(repo, env, s), checkpoint.last_taken(repo)
    )


def _changed_commands(repo: Repo, env: Mapping[str, str], s: SessionFacts) -> tuple[str, ...]:
    """Read only when the session's change touches the configuration (no cost otherwise)."""
    from plan_build.core import config

    if s.committed or s.change is None or config.FILENAME not in {f.path for f in s.change.files}:
        return ()
    from plan_build.core.errors import PlanBuildError
    from plan_build.delivery import verify

    try:
        commands = verify.commands_from(config.load(repo.root))
    except PlanBuildError as exc:
        return (f"(the configuration cannot be read: {exc.what})",)
    return tuple(verify.changed_commands(repo, s.baseline, commands, env))


# --- the screen -------------------------------------------------------------------------


def _cut(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def _when(stamp: str | None) -> str:
    return stamp.replace("T", " ").replace("Z", " UTC") if stamp else "unknown"


def _header(f: StatusFacts) -> list[str]:
    s = f.session
    lines = [f"session {s.id} · {s.mode or 'mode not recorded'} · started {_when(s.started_at)}"]
    ident = s.identity.value or "no identity"
    if s.identity.problem:
        ident += f" ({s.identity.problem})"
    memory = f"memory {s.memory.mode}" if s.memory.mode else "memory mode not recorded"
    if s.memory.mode == "degraded":
        memory += f" ({s.memory.reason or 'reason not recorded'})"
    lines.append(f"  repository {ident} · {memory} · {guard_text(s.baseline.guard)}")
    base = s.baseline_commit[:12] if s.baseline_commit else "no commit yet"
    where = f"  baseline {s.branch or 'detached HEAD'} @ {base}"
    if s.committed:
        where += f" · committed as {s.committed[:12]} at {_when(s.committed_at)}"
    if f.last_checkpoint:
        where += f" · checkpoint {_when(f.last_checkpoint)}"
    lines.append(where)
    if s.head_moved:
        now = s.head[:12] if s.head else "no commit"
        lines.append(f"  warning: HEAD moved since the baseline (now {now}); commit will refuse")
    return lines


def _change(f: StatusFacts, room: int) -> list[str]:
    s, c = f.session, f.session.change
    if c is None:
        return ["intended change: unknown (the session belongs to another worktree)"]
    what = "committed change" if s.committed else "intended change"
    if c.empty:
        return [f"{what}: none"] if s.committed else ["no intended change yet"]
    lines = [f"{what}: {c.summary()}"]
    shown = list(c.files)
    if len(shown) > room:
        shown = shown[: max(room - 1, 1)]
    for fc in shown:
        counts = "binary" if fc.binary else f"+{fc.added} −{fc.removed}"
        lines.append(f"  {fc.status}  {fc.path}  {counts}")
    if len(shown) < len(c.files):
        lines.append(f"  … and {len(c.files) - len(shown)} more")
    if s.pre_existing:
        lines.append(f"  kept apart: {s.pre_existing} path(s) with changes from before the session")
    return lines


_NAMES = {"codex": "Codex", "coderabbit": "CodeRabbit"}


def _reviewer(rv: reviews.ReviewerResult, current: int | None) -> str:
    """`Codex findings (1,290 tokens)`, `CodeRabbit skipped (rate limited) in round 1`."""
    result = rv.result or "result unknown"
    if rv.result in ("failed", "skipped") and rv.reason:
        result += f" ({rv.reason})"
    if rv.round != current:
        result += f" in round {rv.round}"
    if rv.usage is not None:
        result += f" ({codexusage.short_sum(rv.usage)})"
    return f"{_NAMES.get(rv.name, rv.name)} {result}"


def _review(f: StatusFacts) -> list[str]:
    r = f.review
    if r.problem:
        return [f"review: cannot be read: {r.problem}"]
    skipped = [f"  {w}" for w in r.skipped[:2]]
    if len(r.skipped) > 2:
        skipped.append(f"  … and {len(r.skipped) - 2} more skipped")
    if r.workflow is None:
        a = r.approval
        if a is not None and a.workflow is not None:
            return [f"review: no workflow in progress · approval {a.state} ({a.reason})", *skipped]
        return ["review: none (no review workflow for this change)", *skipped]
    where = f"active · step {r.step}" if r.status == "active" else r.status
    lines = [f"review: workflow {r.workflow} · {r.label} · {where}"]
    if r.reviewers:
        lines.append("  reviewers: " + " · ".join(_reviewer(rv, r.round) for rv in r.reviewers))
    if r.findings:
        opened = ", ".join(f"{n} {sev}" for sev, n in r.open_by_severity.items() if n)
        lines.append(f"  findings: {r.findings} · open: {opened or 'none'}")
    if r.missing_decisions:
        ids = list(r.missing_decisions)
        shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
        lines.append(f"  decisions missing: {shown}")
    a = r.approval
    if a is not None and r.status != "active":
        reason = a.reason.removeprefix(f"workflow {a.workflow}: ")  # the line above names it
        lines.append(f"  approval: {a.state} · {reason}")
    elif r.status == "active":
        lines.append("  approval: none yet (the workflow is still in review)")
    return [*lines, *skipped]


def _tasks(f: StatusFacts) -> list[str]:
    t = f.tasks
    if not t.present:
        return []
    if t.problem and not t.total:
        return [f"tasks: TASKS.md cannot be read: {t.problem}"]
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in t.counts.items() if n)
    lines = [f"tasks: {t.total} · {counts or 'none'}" + (f" · {t.problem}" if t.problem else "")]
    p = t.in_progress
    if p is not None:
        attempt = f"attempt {p.attempt}" if p.attempt else "attempt unknown"
        if p.role:
            attempt += f" ({p.role})"
        if p.usage is not None and p.usage.runs:
            attempt += f" · {codexusage.short_sum(p.usage)} so far"
        lines.append(f"  in progress: {p.id} {p.title} · {attempt}")
        if len(p.all_ids) > 1:
            lines.append(f"  in progress together (a wave): {', '.join(p.all_ids)}")
        if p.running is False:
            again = "plan-build dispatch --wave" if p.wave else f"plan-build dispatch {p.id}"
            lines.append(f"  its dispatch is not running: {again} resumes it")
    elif t.last_dispatch:
        d = t.last_dispatch
        lines.append(f"  last dispatch: {d['task']} → {d['status']} ({d['reason']})")
        if d.get("detail"):
            lines.append(f"    {d['detail']}")
    if t.usage:
        shown = [f"{task} {codexusage.short_sum(used)}" for task, used in t.usage[:MAX_USAGE]]
        more = len(t.usage) - MAX_USAGE
        lines.append(
            "  tokens (last dispatch): "
            + " · ".join(shown)
            + (f" · and {more} more (status --json)" if more > 0 else "")
        )
    lines.extend(kept_lines(t.kept))
    return lines


def kept_lines(kept: tuple[tuple[str, str, str], ...]) -> list[str]:
    """One line per worktree a wave kept, with what to do about it."""
    out = []
    for task, state, path in kept:
        then = (
            "plan-build dispatch --wave resumes it"
            if state in ("interrupted", "running")
            else "look at it, then: git worktree remove --force <path>"
        )
        out.append(f"  wave worktree kept: {task} ({state}) · {path} · {then}")
    return out


def _verify(f: StatusFacts) -> list[str]:
    v = f.verify
    if v.problem:
        return [f"verify: cannot be read: {v.problem}"]
    if not v.ran:
        changed = _wrap("verify commands changed in this session: " + "; ".join(f.changed_commands))
        return ["verify: not run yet", *(changed if f.changed_commands else [])]
    result = "passed" if v.ok else "failed: " + ", ".join(v.failed or ("see plan-build verify",))
    if f.session.committed:
        fresh = ""
    elif v.stale is None:
        fresh = " · freshness unknown"
    else:
        fresh = " · stale (the change moved since)" if v.stale else " · current"
    changed = (
        _wrap("verify commands changed in this session: " + "; ".join(f.changed_commands))
        if f.changed_commands
        else []
    )
    return [f"verify: {result} at {_when(v.at)}{fresh}", *changed]


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def _tail(f: StatusFacts, next_line: str) -> list[str]:
    if f.session.committed:
        lines = ["nothing pending: the session is committed"]
    elif f.missing:
        lines = _wrap("missing before commit: " + "; ".join(f.missing))
    else:
        lines = ["ready to commit: review and verification hold for this change"]
    return [*lines, *_wrap(next_line)]


PERSON_ONLY = (COMMIT, "plan-build review.approve --workflow")


def next_line(f: StatusFacts, env: Mapping[str, str]) -> str:
    """`next: …`; a command only a person may run is put to an agent as a request to ask."""
    if f.next.startswith(PERSON_ONLY):
        from plan_build.core.interact import next_command

        return next_command(env, f.next)
    return f"next: {f.next}"


def lines(f: StatusFacts, next_line: str) -> list[str]:
    """The screen: at most MAX_LINES lines of at most WIDTH columns; `next_line` is the
    `next: …` line as the caller words it (for a person, or for an agent)."""
    head = _header(f)
    rest = [*_review(f), *_tasks(f), *_verify(f), *_tail(f, next_line)]
    fixed = len(head) + len(rest) + 3  # the change's summary, "and N more", "kept apart"
    room = max(1, min(MAX_FILES, MAX_LINES - fixed))
    out = [*head, *_change(f, room), *rest]
    if len(out) > MAX_LINES:  # never: each part is bounded; kept as the promise's guard
        out = [*out[: MAX_LINES - 1], out[-1]]
    return [_cut(line) for line in out]


# --- JSON -------------------------------------------------------------------------------


def as_json(f: StatusFacts) -> dict[str, Any]:
    """Every key always present (null where unknown); the older `status --json` keys kept."""
    s = f.session
    return {
        "format": FORMAT,
        "session": s.id,
        "committed": s.committed,
        "branch": s.branch,
        "head": s.head,
        "head_moved": s.head_moved,
        "pre_existing": s.pre_existing,
        "change": s.change.as_json() if s.change is not None else None,
        "session_header": s.as_json(),
        "review": f.review.as_json(),
        "tasks": f.tasks.as_json(),
        "verify": f.verify.as_json(),
        "verify_commands_changed": list(f.changed_commands),
        "busy": f.busy,
        "ready": f.ready,
        "missing": list(f.missing),
        "next": f.next,
        "last_checkpoint": f.last_checkpoint,
    }


def show(session: Session, *, json: bool) -> None:
    """`plan-build status [--json]`: the screen on stderr, the facts as JSON on stdout."""
    from plan_build.core import jsonout

    facts = gather(session.repo, session.env, session.cwd)
    for line in lines(facts, next_line(facts, session.env)):
        session.console.say(line)
    if json:
        jsonout.write(session.stdout, as_json(facts))
        session.stdout.flush()


__all__ = [
    "MAX_LINES",
    "WIDTH",
    "StatusFacts",
    "as_json",
    "gather",
    "lines",
    "next_line",
    "show",
]
