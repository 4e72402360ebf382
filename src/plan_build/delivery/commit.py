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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from plan_build.core import confirmation, fsutil, interrupts, snapshot
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.core.interact import Interaction, no_terminal, require_person
from plan_build.core.ui import Console
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery import intended as change_mod
from plan_build.delivery import readiness
from plan_build.delivery import verify as verify_mod
from plan_build.delivery.baseline import ZERO_OID, Baseline
from plan_build.delivery.commitapproval import (
    Approval,
    accept_allowlisted,
    current_approval,
    review_gate,
    save_approval,
)
from plan_build.delivery.commitplan import Overlap, Plan, Spliced, build_plan, plan_of, splice
from plan_build.delivery.commitrecovery import (
    entries_json,
    pending_path,
    read_pending,
    recover,
    repo_lock,
    sync_index,
    tidy,
)
from plan_build.delivery.intended import display_path

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


# --- interruption ---------------------------------------------------------------------


def _checkpoint(stage: str) -> None:
    """A no-op that tests replace to interrupt the commit at a given stage."""


# --- the step -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    commit: str
    branch: str | None
    plan: Plan
    message: str
    interrupted: bool = False


def _snapshot_settled(repo: Repo) -> str:
    first = snapshot.worktree_tree(repo)
    second = snapshot.worktree_tree(repo)
    if first != second:
        raise readiness.SETTLING
    return first


class Live:
    """`commit`'s probe: each fact measured on the live repository when a rule first asks,
    and kept, so the plan, the verify record and the review verdict are there afterwards."""

    def __init__(self, repo: Repo, base: Baseline) -> None:
        self.repo, self.base, self.root = repo, base, repo.root
        self._tree: str | None = None
        self._change: change_mod.Change | None = None
        self._spliced: Spliced | None = None
        self._record: dict[str, Any] | None = None
        self._approval: Approval | None = None

    def busy(self) -> str | None:
        return baseline_mod.busy_state(self.repo)

    def unmerged(self) -> list[str]:
        return self.repo.unmerged_paths()

    def head(self) -> str | None:
        return self.repo.head()

    def branch(self) -> str | None:
        return self.repo.branch()

    def settled(self) -> bool:
        first = snapshot.worktree_tree(self.repo)
        second = snapshot.worktree_tree(self.repo)
        self._tree = first
        return first == second

    def tree(self) -> str | None:
        return self._tree

    def change(self) -> change_mod.Change:
        if self._change is None:
            self._change = change_mod.compute(self.repo, self.base, tree=self._tree)
        return self._change

    def empty(self) -> bool:
        return self.change().empty

    def overlaps(self) -> list[Overlap]:
        self._spliced = splice(self.repo, self.base, self.change())
        return self._spliced.overlaps

    def record(self) -> dict[str, Any] | None:
        self._record = verify_mod.last_record(self.repo, self.base.id)
        return self._record

    def approval(self) -> Approval:
        self._approval = current_approval(self.repo)
        return self._approval

    def identity_known(self) -> bool:
        return readiness.identity_known(self.repo)

    def ready(self) -> tuple[Plan, dict[str, Any], str]:
        """What a probe that found no refusal measured: the plan, the record, the verdict."""
        if self._spliced is None or self._record is None or self._approval is None:
            raise RuntimeError("a probe was read as ready before every rule was asked")
        plan = plan_of(self.repo, self.base, self.change(), self._spliced)
        return plan, self._record, readiness.review_verdict(self._approval, self._tree)[1]


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
    require_person(env, what="the commit", command=COMMAND, parents=parents)
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
        # what was established (ADR 0192): the answer on a terminal, a process that can write
        # the protected state (so outside the session's sandbox), the guard the launch recorded
        how = confirmation.how(
            answered=confirmation.ON_TERMINAL,
            state_dir=repo.state_dir,
            guard=getattr(base, "guard", None),  # absent on sessions launched before it
        )
        save_approval(repo, plan, record, review, accepted, how=how)
        return _publish(repo, plan, message, env, how)


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
    """Every refusal that needs no user (`readiness`, in its order): the first one is raised."""
    probe = Live(repo, base)
    first = next(readiness.refusals(probe), None)
    if first is not None:
        raise first.error
    return probe.ready()


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
            {"old": base.head, "new": commit, "index": entries_json(plan.index_entries)},
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
            sync_index(repo, plan.index_entries)
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
    "pending_path",
    "read_pending",
    "recover",
    "repo_lock",
    "review_gate",
    "run",
    "tidy",
]
