"""One approval-gated commit of exactly the intended change, leaving pre-existing work alone.

The commit's tree is HEAD plus the session's edits, built in a temporary index: for a file
only the session touched, its current version; for a file that also had uncommitted edits
before the session, HEAD's version with only the session's hunks spliced in (`hunks`), or a
refusal naming the file and lines when the two sets of edits overlap or adjoin. The commit
is made with `git commit-tree` (no hooks: the project's checks ran in `verify`) and published
with `git update-ref HEAD NEW OLD`, a compare-and-swap that fails if HEAD moved. Then only the
committed paths of the user's index are updated, so staged edits from before the session
stay staged and the work tree is never written. Nothing here pushes.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from plan_build import fsutil, interrupts, snapshot
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery import hunks
from plan_build.delivery import intended as change_mod
from plan_build.delivery import verify as verify_mod
from plan_build.delivery.baseline import ZERO_OID, Baseline
from plan_build.delivery.intended import Change, Entry, display_path
from plan_build.errors import ExitCode, PlanBuildError
from plan_build.gitrepo import Repo
from plan_build.interact import Interaction, no_terminal, require_person
from plan_build.ui import Console

# --- review gate (seam) -----------------------------------------------------------------


def review_gate(repo: Repo, *, tree: str | None = None) -> tuple[bool, str]:
    """Whether review lets this change be committed, and why.

    No review workflow at all passes (and the summary says so); otherwise the approval must be
    plan-build's, for an implementation round, and for exactly this change (`tree`, the work
    tree without plan-build's own state, which is what review rounds fingerprint).
    """
    from plan_build.review.approval import current_approval

    approval = current_approval(repo)
    if approval.workflow is None:
        return True, "no review recorded (no review workflow for this change)"
    if not approval.approved:
        return False, approval.reason
    if approval.tree is None:
        return False, f"{approval.reason}: review it with plan-build review.impl"
    if approval.stale or (tree is not None and approval.tree != tree):
        return False, f"{approval.reason}: the approval is stale, review again (review.repeat)"
    return True, approval.reason


# --- planning ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Overlap:
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{display_path(self.path)}: {self.detail}"


class _Conflict(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Plan:
    base: Baseline
    change: Change
    new_tree: str
    commit_entries: list[tuple[str, Entry | None]]  # the committed version of each path
    index_entries: list[tuple[str, Entry | None]]  # the user's index afterwards, same paths
    kept: list[str] = field(default_factory=list)  # pre-existing changes left out


def _line_conflict_message(
    pairs: list[tuple[hunks.Hunk, hunks.Hunk]], describe: Callable[[hunks.Hunk, hunks.Hunk], str]
) -> str:
    shown = [describe(x, y) for x, y in pairs[:3]]
    more = len(pairs) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _merge_scalar(base: str, a: str, b: str, conflict: str) -> str:
    if a == base:
        return b
    if b == base:
        return a
    raise _Conflict(conflict)


class _Splicer:
    """Merges two sets of edits of one path relative to a base, through git objects."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def _hunks(self, old: str, new: str) -> list[hunks.Hunk]:
        diff = change_mod.git_bytes(
            self.repo, "diff", "-U0", "-a", "--no-color", "--no-ext-diff", "--no-textconv", old, new
        )
        return hunks.parse_u0(diff)

    def merge(
        self,
        base: Entry | None,
        a: Entry | None,
        b: Entry | None,
        *,
        whole: str,
        mode: str,
        lines: Callable[[hunks.Hunk, hunks.Hunk], str],
    ) -> Entry | None:
        """`base` plus both sides' changes; `a` and `b` are each base plus one side's edits."""
        if a == base:
            return b
        if b == base:
            return a
        if base is None or a is None or b is None:
            raise _Conflict(whole)
        if not (base.kind == a.kind == b.kind == "file"):
            raise _Conflict(whole)
        new_mode = _merge_scalar(base.mode, a.mode, b.mode, mode)
        if a.oid == base.oid:
            return Entry(new_mode, b.oid)
        if b.oid == base.oid:
            return Entry(new_mode, a.oid)
        base_data, a_data, b_data = change_mod.read_objects(self.repo, [base.oid, a.oid, b.oid])
        if base_data is None or a_data is None or b_data is None:
            raise _Conflict(whole)
        if any(change_mod.is_binary(d) for d in (base_data, a_data, b_data)):
            raise _Conflict(whole + " (binary file)")
        base_lines = hunks.split_lines(base_data)
        a_lines, b_lines = hunks.split_lines(a_data), hunks.split_lines(b_data)
        a_hunks, b_hunks = self._hunks(base.oid, a.oid), self._hunks(base.oid, b.oid)
        try:
            hunks.validate(a_hunks, base_lines, a_lines)
            hunks.validate(b_hunks, base_lines, b_lines)
        except ValueError as exc:
            raise _Conflict(f"its edits cannot be separated reliably ({exc})") from exc
        pairs = hunks.conflicts(a_hunks, b_hunks)
        if pairs:
            raise _Conflict(_line_conflict_message(pairs, lines))
        merged = hunks.splice(base_lines, a_lines, a_hunks, b_lines, b_hunks)
        return Entry(new_mode, change_mod.write_blob(self.repo, merged))


def build_plan(repo: Repo, base: Baseline, change: Change) -> Plan:
    """The commit's tree and the user's index afterwards, or a refusal naming every overlap."""
    head_tree = base.head_tree
    pre = change_mod.raw_diff(repo, head_tree, base.worktree_tree)
    staged = change_mod.raw_diff(repo, head_tree, base.staged_tree)
    splicer = _Splicer(repo)
    overlaps: list[Overlap] = []
    commit_entries: list[tuple[str, Entry | None]] = []
    index_entries: list[tuple[str, Entry | None]] = []
    for fc in change.files:
        path = fc.path
        b_entry, c_entry = fc.old, fc.new
        h_entry = pre[path][0] if path in pre else b_entry
        try:
            # HEAD + session = baseline + (baseline -> HEAD) + (baseline -> current).
            r_entry = splicer.merge(
                b_entry,
                h_entry,
                c_entry,
                whole="the session changed a file that already had uncommitted changes of "
                "another kind before the session (added, deleted, retyped or binary)",
                mode="the session and your earlier edit both changed its file mode",
                lines=lambda x, y: (
                    f"the session's edit ({y.new_lines()} now) touches your earlier edit "
                    f"({x.base_lines()} at the session start)"
                ),
            )
            s_entry = staged[path][1] if path in staged else h_entry
            # The index afterwards: committed version + the user's staged edits.
            i_entry = splicer.merge(
                h_entry,
                r_entry,
                s_entry,
                whole="the session changed a file whose staged version cannot be kept apart "
                "from it (added, deleted, retyped or binary)",
                mode="the session and your staged edit both changed its file mode",
                lines=lambda x, y: (
                    f"the session's edit ({x.new_lines()} of the commit) touches your staged "
                    f"edit ({y.new_lines()} of the staged file)"
                ),
            )
        except _Conflict as exc:
            overlaps.append(Overlap(path, exc.detail))
            continue
        commit_entries.append((path, r_entry))
        index_entries.append((path, i_entry))
    if overlaps:
        listed = "\n    ".join(str(o) for o in overlaps[:10])
        more = f"\n    and {len(overlaps) - 10} more" if len(overlaps) > 10 else ""
        raise PlanBuildError(
            f"the session's change overlaps work that was uncommitted before it started; "
            f"nothing was committed:\n    {listed}{more}",
            "commit by hand (git add -p) or move one of the edits apart so an unchanged line "
            "separates them, then run plan-build commit again",
            code=ExitCode.BLOCKED,
        )
    with snapshot.temp_index(repo, base.head or "empty") as env:
        change_mod.git_bytes(
            repo,
            "update-index",
            "-z",
            "--index-info",
            input=change_mod.index_info(commit_entries),
            env=env,
        )
        new_tree = change_mod.git_bytes(repo, "write-tree", env=env).decode().strip()
    touched = set(change_mod.raw_diff(repo, head_tree, new_tree))
    if not touched <= {p for p, _ in commit_entries}:  # a bug, not a user error
        raise RuntimeError("the commit tree changes paths outside the intended change")
    kept = [p for p in pre if p not in {p2 for p2, _ in commit_entries}]
    return Plan(base, change, new_tree, commit_entries, index_entries, kept)


# --- messages -----------------------------------------------------------------------------


def clean_message(text: str, *, strip_comments: bool) -> str:
    """Trailing spaces and surrounding blank lines removed; '#' lines dropped from an editor."""
    lines = text.replace("\r\n", "\n").split("\n")
    if strip_comments:
        lines = [line for line in lines if not line.startswith("#")]
    lines = [line.rstrip() for line in lines]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def _template(plan: Plan) -> str:
    rows = "\n".join(f"#   {f.status}  {display_path(f.path)}" for f in plan.change.files[:40])
    return (
        "\n"
        "# Write the commit message for the session's change above this line.\n"
        "# Lines starting with '#' are dropped; an empty message stops the commit.\n"
        f"#\n# {plan.change.summary()}:\n{rows}\n"
    )


# --- locking, interruption, recovery ------------------------------------------------------


@contextlib.contextmanager
def repo_lock(repo: Repo) -> Iterator[None]:
    """One plan-build commit at a time per repository (all worktrees share the lock)."""
    repo.state_dir.mkdir(parents=True, exist_ok=True)
    path = repo.state_dir / "commit.lock"
    fh: IO[str] = path.open("a", encoding="utf-8")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise PlanBuildError(
                "another plan-build commit is running in this repository",
                "wait for it to finish, then run plan-build commit again",
                code=ExitCode.BLOCKED,
            ) from exc
        yield
    finally:
        fh.close()


def _checkpoint(stage: str) -> None:
    """A no-op that tests replace to interrupt the commit at a given stage."""


def pending_path(repo: Repo, session_id: str) -> Path:
    return baseline_mod.sessions_dir(repo) / session_id / "commit-pending.json"


def _entries_json(entries: list[tuple[str, Entry | None]]) -> list[list[str | None]]:
    return [[p, e.mode if e else None, e.oid if e else None] for p, e in entries]


def _entries_from_json(rows: list[list[str | None]]) -> list[tuple[str, Entry | None]]:
    return [(str(p), Entry(str(m), str(o)) if m and o else None) for p, m, o in rows]


def _sync_index(repo: Repo, entries: list[tuple[str, Entry | None]]) -> None:
    change_mod.git_bytes(
        repo, "update-index", "-z", "--index-info", input=change_mod.index_info(entries)
    )


PENDING_FIX = (
    "if `git log -1` is not the session's commit, delete the file and run plan-build commit "
    "again; if it is, delete the file and `git add` the committed files your index still lacks"
)


def read_pending(path: Path) -> dict[str, Any] | None:
    """The record of a commit in flight (None when there is none), checked for its shape."""
    try:
        data = fsutil.read_json(path, PENDING_FIX)
    except FileNotFoundError:
        return None
    oid = re.compile(r"^[0-9a-f]{40,64}$")
    rows = data.get("index") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or not (data.get("old") is None or oid.match(str(data.get("old"))))
        or not oid.match(str(data.get("new")))
        or not isinstance(rows, list)
        or not all(
            isinstance(r, list) and len(r) == 3 and all(x is None or isinstance(x, str) for x in r)
            for r in rows
        )
    ):
        raise fsutil.StateFileError(path, "it is not a pending-commit record", PENDING_FIX)
    return data


def tidy(repo: Repo) -> None:
    """Remove what killed runs left: temp indexes and temp files (by their dead owner) and,
    for sessions already marked committed, the pending record and the session ref that the
    run died before removing. Only while no commit runs (the repository's commit lock is
    free); the user's index and HEAD are never touched here."""
    snapshot.sweep_debris()
    sessions = baseline_mod.sessions_dir(repo)
    if not sessions.is_dir():
        return
    held = contextlib.ExitStack()
    try:
        held.enter_context(repo_lock(repo))
    except (PlanBuildError, OSError):
        return  # a live commit owns these files right now (or the state dir is read-only)
    with held:
        for folder in sessions.iterdir():
            if folder.is_dir():
                fsutil.sweep(folder)
        listed = repo.git(
            "for-each-ref", "--format=%(refname) %(objectname)", baseline_mod.REF_PREFIX
        ).stdout.split("\n")
        pins = dict(line.split(" ", 1) for line in listed if " " in line)
        for base in baseline_mod.all_baselines(repo):
            if not base.committed:
                continue  # an unfinished commit is recover()'s, in the next commit
            pending_path(repo, base.id).unlink(missing_ok=True)
            if pins.get(base.ref) == base.pin:
                repo.git("update-ref", "-d", base.ref, base.pin, check=False)


def recover(repo: Repo, base: Baseline) -> Baseline | None:
    """Finish or discard a commit that was cut off between update-ref and the index update."""
    path = pending_path(repo, base.id)
    data = read_pending(path)
    if data is None:
        return None
    head = repo.head()
    if head == data["new"]:
        _sync_index(repo, _entries_from_json(data["index"]))
        done = baseline_mod.mark_committed(repo, base, data["new"])
        path.unlink()
        return done
    if head == data["old"]:
        path.unlink()  # the commit never landed
    return None


# --- the step -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    commit: str
    branch: str | None
    plan: Plan
    message: str
    interrupted: bool = False


def _identity_ok(repo: Repo) -> None:
    for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        if not repo.git("var", var, check=False).ok:
            raise PlanBuildError(
                "git does not know who you are, so it cannot write the commit",
                'set it: git config user.name "Your Name" && git config user.email you@example.com',
                code=ExitCode.BLOCKED,
            )


def _snapshot_settled(repo: Repo) -> str:
    first = snapshot.worktree_tree(repo)
    second = snapshot.worktree_tree(repo)
    if first != second:
        raise PlanBuildError(
            "the work tree is still changing (is an agent or a build still running?)",
            "stop whatever is writing files, then run plan-build commit again",
            code=ExitCode.BLOCKED,
        )
    return first


def check_head(repo: Repo, base: Baseline) -> None:
    head, branch = repo.head(), repo.branch()
    if head != base.head:
        was = base.head[:12] if base.head else "no commit yet"
        raise PlanBuildError(
            f"HEAD moved since the session baseline (was {was}, now "
            f"{head[:12] if head else 'no commit'}); the session's work can no longer be told "
            "apart from other commits",
            "commit by hand after reviewing git diff, or move HEAD back "
            f"(git reset --soft {base.head or '<baseline>'}) and retry",
            code=ExitCode.BLOCKED,
        )
    if branch != base.branch:
        raise PlanBuildError(
            f"the checked-out branch changed since the session baseline "
            f"(was {base.branch or 'detached HEAD'}, now {branch or 'detached HEAD'})",
            f"switch back (git switch {base.branch})"
            if base.branch
            else "check out the baseline commit again",
            code=ExitCode.BLOCKED,
        )


def require_verified(repo: Repo, base: Baseline, tree: str) -> dict[str, Any]:
    record = verify_mod.last_record(repo, base.id)
    if record is None:
        raise PlanBuildError(
            "the change has not been verified",
            "run plan-build verify, fix what it reports, then commit",
            code=ExitCode.BLOCKED,
        )
    if record.get("change", {}).get("tree") != tree:
        raise PlanBuildError(
            "the change differs from the one last verified (files changed since plan-build verify)",
            "run plan-build verify again",
            code=ExitCode.BLOCKED,
        )
    if not record.get("ok"):
        failed = [c["id"] for c in record.get("checks", []) if c.get("status") == "fail"]
        if failed and set(failed) <= verify_mod.ACCEPTABLE_AT_COMMIT:
            return record  # the user decides at the approval (accept_allowlisted)
        raise PlanBuildError(
            f"verification failed for this change ({', '.join(failed) or 'see plan-build verify'})",
            "fix what plan-build verify reports and run it again",
            code=ExitCode.BLOCKED,
        )
    return record


def show_summary(
    console: Console, plan: Plan, record: Mapping[str, Any], review: str, message: str
) -> None:
    base = plan.base
    where = base.branch or "detached HEAD"
    head = base.head[:12] if base.head else "first commit"
    console.say(f"commit · session {base.id} · {where} @ {head}")
    console.say(f"  {plan.change.summary()}")
    for f in plan.change.files[:50]:
        counts = "binary" if f.binary else f"+{f.added} −{f.deleted}"
        console.say(f"    {f.status}  {display_path(f.path)}  {counts}")
    if len(plan.change.files) > 50:
        console.say(f"    … and {len(plan.change.files) - 50} more")
    rows = record.get("checks", [])
    passed = sum(1 for c in rows if c.get("status") == "pass")
    warned = [c["id"] for c in rows if c.get("status") in ("warn", "skip")]
    console.say(
        f"  verified {record.get('when', '')}: {passed} check(s) passed"
        + (f"; not run or warned: {', '.join(warned)}" if warned else "")
    )
    console.say(f"  review: {review}")
    if plan.kept:
        console.say(
            f"  left as they are: {len(plan.kept)} path(s) with changes from before the session"
        )
    if base.branch is None:
        console.say("  note: HEAD is detached; the commit will not be on any branch")
    console.say("  message:")
    for line in message.rstrip("\n").split("\n"):
        console.say(f"    {line}")


def run(
    repo: Repo,
    base: Baseline,
    *,
    ui: Interaction,
    console: Console,
    env: Mapping[str, str],
    message: str | None = None,
    parents: Callable[[], list[int]] | None = None,
) -> Outcome:
    """Make the session's one commit, after every check and the user's approval."""
    message = _check_message(message)
    how = require_person(env, what="the commit", command=COMMAND, parents=parents)
    with repo_lock(repo):
        recovered = recover(repo, base)
        if recovered is not None:
            raise PlanBuildError(
                f"session {base.id} was already committed as {str(recovered.committed)[:12]} "
                "(an interrupted commit was finished just now)",
                "start a new session for further work",
                code=ExitCode.USAGE,
            )
        plan, record, review = prepare(repo, base)
        if message is None:
            message = _ask_message(ui, plan)
        show_summary(console, plan, record, review, message)
        accepted = accept_allowlisted(ui, console, record)
        where = base.branch or "detached HEAD"
        if not ui.confirm(f"Create this commit on {where}? Nothing is pushed.", default=False):
            raise PlanBuildError(
                "stopped at your request; nothing was committed",
                "run plan-build commit again when you are ready",
                code=ExitCode.APPROVAL,
            )
        if _snapshot_settled(repo) != plan.change.tree or repo.head() != base.head:
            raise PlanBuildError(
                "the repository changed while waiting for approval; nothing was committed",
                "run plan-build verify and plan-build commit again",
                code=ExitCode.BLOCKED,
            )
        save_approval(repo, plan, record, review, accepted, how=how)
        return _publish(repo, plan, message, env, how)


def accept_allowlisted(
    ui: Interaction, console: Console, record: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Ask the user (at the terminal; agents were refused earlier) to accept the suspected
    secrets that an allowlist pragma in the change silences. Returns what was accepted."""
    failed = {c.get("id") for c in record.get("checks", []) if c.get("status") == "fail"}
    if "secrets.allowlisted" not in failed:
        return []
    items = [i for i in record.get("allowlisted", []) if isinstance(i, dict)]
    console.say("  suspected secrets silenced by an allowlist pragma in the change:")
    for i in items[:50]:
        console.say(f"    {display_path(str(i.get('path')))}:{i.get('line')} ({i.get('type')})")
    if len(items) > 50:
        console.say(f"    … and {len(items) - 50} more")
    question = (
        "Accept the allowlisted finding(s) above as not secrets, recording that in the "
        "commit's approval record?"
    )
    if not ui.confirm(question, default=False):
        raise PlanBuildError(
            "the allowlisted suspected secrets were not accepted; nothing was committed",
            "take them out of the change (or keep the pragma and accept them), then run "
            "plan-build verify and plan-build commit again",
            code=ExitCode.APPROVAL,
        )
    return items


def approval_path(repo: Repo, session_id: str) -> Path:
    return baseline_mod.sessions_dir(repo) / session_id / "commit-approval.json"


def save_approval(
    repo: Repo,
    plan: Plan,
    record: Mapping[str, Any],
    review: str,
    accepted: list[dict[str, Any]],
    *,
    how: str,
) -> None:
    """The commit's approval record: what the user approved at the terminal, and which
    allowlisted findings they accepted. Written before HEAD moves."""
    base = plan.base
    fsutil.write_json(
        repo.in_state(approval_path(repo, base.id)),
        {
            "session": base.id,
            "approved_at": baseline_mod.now_utc(),
            "branch": base.branch,
            "head": base.head,
            "tree": plan.change.tree,
            "commit_tree": plan.new_tree,
            "verified_at": record.get("when"),
            "review": review,
            "confirmed_on_terminal": True,
            "confirmed_how": how,
            "accepted_allowlisted": accepted,
        },
    )


COMMAND = 'plan-build commit --message "…"'


def _check_message(message: str | None) -> str | None:
    """Reject an empty message before anything is read or locked."""
    if message is not None:
        message = clean_message(message, strip_comments=False)
        if not message:
            raise PlanBuildError(
                "the commit message is empty",
                'give one: --message "what and why"',
                code=ExitCode.USAGE,
            )
    return message


def prepare(repo: Repo, base: Baseline) -> tuple[Plan, dict[str, Any], str]:
    """Every refusal that needs no user: repository state, overlaps, verification, review."""
    baseline_mod.require_settled(repo, "commit")
    check_head(repo, base)
    tree = _snapshot_settled(repo)
    change = change_mod.compute(repo, base, tree=tree)
    if change.empty:
        raise PlanBuildError(
            "nothing to commit: the work tree matches the session baseline",
            "there is no session work to commit",
            code=ExitCode.BLOCKED,
        )
    plan = build_plan(repo, base, change)
    record = require_verified(repo, base, tree)
    ok, review = review_gate(repo, tree=tree)
    if not ok:
        raise PlanBuildError(
            f"review blocks the commit: {review}",
            "finish the review, then run plan-build commit again",
            code=ExitCode.BLOCKED,
        )
    _identity_ok(repo)
    return plan, record, review


def _ask_message(ui: Interaction, plan: Plan) -> str:
    if not ui.interactive:
        raise no_terminal("write the commit message (or pass --message)")
    message = clean_message(ui.edit(_template(plan), suffix=".txt"), strip_comments=True)
    if not message:
        raise PlanBuildError(
            "the commit message is empty, so nothing was committed",
            'run plan-build commit again and write a message (or pass --message "…")',
            code=ExitCode.APPROVAL,
        )
    return message


def _publish(
    repo: Repo, plan: Plan, message: str, env: Mapping[str, str], how: str | None = None
) -> Outcome:
    base = plan.base
    args = ["commit-tree", plan.new_tree]
    if base.head:
        args += ["-p", base.head]
    sign = repo.git("config", "--type=bool", "commit.gpgsign", check=False).stdout.strip()
    if sign == "true":
        args.append("-S")
    commit = repo.git(*args, "-F", "-", input=message, env=dict(env)).stdout.strip()
    _checkpoint("after-commit-tree")
    index_lock = snapshot.index_file(repo).with_name("index.lock")
    if index_lock.exists():
        raise PlanBuildError(
            "another git command holds the index (index.lock exists); nothing was committed",
            f"wait for it to finish (or remove {index_lock} if no git command is running)",
            code=ExitCode.BLOCKED,
        )
    pending = pending_path(repo, base.id)
    with interrupts.held_back() as caught:
        fsutil.write_json(
            pending,
            {"old": base.head, "new": commit, "index": _entries_json(plan.index_entries)},
            indent=None,
        )
        subject = message.split("\n", 1)[0]
        moved = repo.git(
            "update-ref",
            "-m",
            f"plan-build commit: {subject}",
            "HEAD",
            commit,
            base.head or ZERO_OID,
            check=False,
        )
        if not moved.ok:
            pending.unlink(missing_ok=True)
            raise PlanBuildError(
                "HEAD moved while committing; nothing was committed",
                "run plan-build commit again",
                code=ExitCode.BLOCKED,
            )
        _checkpoint("after-update-ref")
        try:
            _sync_index(repo, plan.index_entries)
        except PlanBuildError as exc:
            raise PlanBuildError(
                f"committed {commit[:12]}, but your index could not be updated yet: {exc.what}",
                "run plan-build commit again: it only finishes the index update",
                code=ExitCode.BLOCKED,
            ) from exc
        baseline_mod.mark_committed(repo, base, commit, approved=how)
        pending.unlink(missing_ok=True)
    return Outcome(commit, base.branch, plan, message, interrupted=bool(caught))


__all__ = [
    "Outcome",
    "Overlap",
    "Plan",
    "build_plan",
    "clean_message",
    "recover",
    "repo_lock",
    "review_gate",
    "run",
]
