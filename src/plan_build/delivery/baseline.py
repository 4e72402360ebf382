"""The session baseline: the repository exactly as it was when a session started.

Three trees are recorded: HEAD's, the user's staged tree and the whole work tree (tracked and
untracked, not ignored), all taken through a temporary index so the user's index and files stay
byte-identical. They are pinned by a private ref, `refs/plan-build/sessions/<id>`, pointing at
a commit whose tree is the work-tree snapshot and whose parents are HEAD (when born) and a
commit of the staged tree; the pin keeps the objects safe from `git gc` and shows up in no
branch list. The metadata (JSON) lives under `<git common dir>/plan-build/sessions/<id>/`,
shared by every worktree and surviving a worktree's removal.

Everything after this step compares against the baseline: the intended change is
"current work tree minus baseline work tree", and the user's pre-existing edits are
"baseline minus HEAD".
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from plan_build.core import clock, fsutil, sessionvars, snapshot
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo

ENV_VAR = sessionvars.SESSION
REF_PREFIX = "refs/plan-build/sessions/"
ZERO_OID = "0" * 40
FORMAT = 1
STATUS_INDEX = "status-index"  # the session's kept index for `status` (statusindex)

# plan-build's own bookkeeping commits carry a fixed identity, so a baseline works in a
# repository where the user has not configured one yet (and is never signed).
_PIN_IDENTITY = {
    "GIT_AUTHOR_NAME": "plan-build",
    "GIT_AUTHOR_EMAIL": "plan-build@localhost",
    "GIT_COMMITTER_NAME": "plan-build",
    "GIT_COMMITTER_EMAIL": "plan-build@localhost",
}


@dataclass(frozen=True)
class Baseline:
    """One session's starting point. `id` goes into Claude's environment as PLAN_BUILD_SESSION."""

    id: str
    created: str  # UTC, ISO 8601
    worktree: str  # the work tree's top level when captured
    git_dir: str  # this worktree's git dir: identifies the worktree even after a move
    branch: str | None  # None: detached HEAD
    head: str | None  # None: unborn branch (no commit yet)
    head_tree: str
    staged_tree: str
    worktree_tree: str
    pin: str  # the commit that refs/plan-build/sessions/<id> points at
    mode: str | None = None  # "standard" / "architect" when the launcher knew it
    committed: str | None = None  # the commit plan-build made for this session, once made
    committed_at: str | None = None
    approved: str | None = None  # how the commit's approval was confirmed (never an agent)
    # paths whose uncommitted changes predate the session (HEAD tree vs work-tree tree): both
    # trees are fixed, so it is counted once here, not on every `status` (None: not recorded)
    pre_existing: int | None = None
    # the memory mode the launch settled on ("required" / "degraded") and, when degraded, why
    # (the failing checks): `status` shows it to whoever comes back (None: not launched here)
    memory_mode: str | None = None
    memory_reason: str | None = None
    # how the launch guarded the session: "sandbox" or "unguarded" (a person's choice, typed
    # at the launch); None: not launched by a plan-build that records it (ADR 0190)
    guard: str | None = None

    @property
    def ref(self) -> str:
        return REF_PREFIX + self.id

    def as_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Baseline:
        fields: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__}
        required = ("id", "created", "worktree", "git_dir", "head_tree", "staged_tree")
        missing = [k for k in (*required, "worktree_tree", "pin") if not fields[k]]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        count = fields["pre_existing"]
        if type(count) is not int or count < 0:  # absent, or not a count: counted again
            fields["pre_existing"] = None
        return cls(**fields)


def new_id() -> str:
    """A sortable, unique session id: UTC time plus 6 random hex digits."""
    return f"{clock.sortable_id()}-{secrets.token_hex(3)}"


def validate_id(session_id: str) -> str:
    if not sessionvars.is_session_id(session_id):
        raise PlanBuildError(
            f"{session_id!r} is not a valid session id",
            "use letters, digits, '-', '_' and single dots (at most 64 characters), "
            "or leave the id out and plan-build picks one",
            code=ExitCode.USAGE,
        )
    return session_id


def sessions_dir(repo: Repo) -> Path:
    return repo.state_dir / "sessions"


def meta_path(repo: Repo, session_id: str) -> Path:
    return sessions_dir(repo) / session_id / "baseline.json"


def busy_state(repo: Repo) -> str | None:
    """What unfinished git operation is in progress in this worktree, if any."""
    g = repo.git_dir
    if (g / "MERGE_HEAD").exists():
        return "a merge"
    if (g / "rebase-merge").exists() or (g / "rebase-apply").exists():
        return "a rebase (or git am)"
    if (g / "CHERRY_PICK_HEAD").exists():
        return "a cherry-pick"
    if (g / "REVERT_HEAD").exists():
        return "a revert"
    if (g / "sequencer").exists():
        return "a cherry-pick or revert sequence"
    return None


def busy_error(busy: str, doing: str, root: Path) -> PlanBuildError:
    return PlanBuildError(
        f"cannot {doing}: {busy} is in progress in {root}",
        "finish it (git status shows how) or abort it, then run this again",
        code=ExitCode.BLOCKED,
    )


def conflicts_error(unmerged: list[str], doing: str) -> PlanBuildError:
    shown = ", ".join(unmerged[:5]) + (" …" if len(unmerged) > 5 else "")
    return PlanBuildError(
        f"cannot {doing}: {len(unmerged)} path(s) have unresolved conflicts ({shown})",
        "resolve the conflicts and git add the files (or abort the operation), then retry",
        code=ExitCode.BLOCKED,
    )


def require_settled(repo: Repo, doing: str) -> None:
    """Refuse while git is in the middle of something: the trees would not mean what they say.
    (`commit` asks the same through `readiness`, which words it with these errors.)"""
    busy = busy_state(repo)
    if busy:
        raise busy_error(busy, doing, repo.root)
    unmerged = repo.unmerged_paths()
    if unmerged:
        raise conflicts_error(unmerged, doing)


def head_and_tree(repo: Repo) -> tuple[str | None, str]:
    """HEAD's commit and tree in one git call; (None, empty tree) on an unborn branch."""
    r = repo.git("rev-parse", "HEAD^{commit}", "HEAD^{tree}", "--", check=False)
    lines = r.stdout.split()
    if r.ok and len(lines) >= 2:
        return lines[0], lines[1]
    return None, snapshot.EMPTY_TREE


def _commit_tree(repo: Repo, tree: str, parents: list[str], message: str) -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return repo.git(*args, "-F", "-", overlay=_PIN_IDENTITY, input=message).stdout.strip()


def capture(
    repo: Repo,
    *,
    session_id: str | None = None,
    mode: str | None = None,
    memory_mode: str | None = None,
    memory_reason: str | None = None,
    guard: str | None = None,
) -> Baseline:
    """Snapshot the repository as it is now and pin it as session `session_id` (new if None).

    Writes only git objects, one private ref and the metadata file; the user's index, work
    tree, branches and HEAD are untouched.
    """
    sid = validate_id(session_id) if session_id is not None else new_id()
    require_settled(repo, "take a session baseline")
    if session_id is not None and (
        meta_path(repo, sid).exists() or _ref_target(repo, REF_PREFIX + sid)
    ):
        raise PlanBuildError(
            f"session {sid} already has a baseline",
            "choose another id, or leave the id out and plan-build picks a new one",
            code=ExitCode.USAGE,
        )
    head, head_tree = head_and_tree(repo)
    branch = repo.branch()
    snap = snapshot.capture(repo)
    # the "kept apart" count needs only the two trees: git counts it while the pin is made
    counted: list[int] = []

    def count() -> None:
        with contextlib.suppress(Exception):  # not recorded: `status` counts it when asked
            counted.append(len(snapshot.changed_paths(repo, head_tree, snap.worktree_tree)))

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    if repo.head() != head:
        counter.join()
        raise PlanBuildError(
            "HEAD moved while the baseline was being taken",
            "wait for the other git command to finish, then retry",
            code=ExitCode.BLOCKED,
        )
    base = Baseline(
        id=sid,
        created=clock.stamp(),
        worktree=str(repo.root),
        git_dir=str(repo.git_dir),
        branch=branch,
        head=head,
        head_tree=head_tree,
        staged_tree=snap.staged_tree,
        worktree_tree=snap.worktree_tree,
        pin="",
        mode=mode,
        memory_mode=memory_mode,
        memory_reason=memory_reason,
        guard=guard,
    )
    parents = [head] if head else []
    if snap.staged_tree != head_tree:  # keep the staged tree reachable too
        parents.append(
            _commit_tree(
                repo, snap.staged_tree, parents[:1], f"plan-build session {sid}: staged tree\n"
            )
        )
    meta = json.dumps({k: v for k, v in base.as_json().items() if k != "pin"}, sort_keys=True)
    pin = _commit_tree(
        repo, snap.worktree_tree, parents, f"plan-build session {sid}: baseline\n\n{meta}\n"
    )
    base = replace(base, pin=pin)
    pinned = repo.git(
        "update-ref", "-m", f"plan-build baseline {sid}", base.ref, pin, ZERO_OID, check=False
    )
    counter.join()
    if not pinned.ok:  # the ref appeared meanwhile: never overwrite another session's pin
        raise PlanBuildError(
            f"session {sid} already has a baseline",
            "leave the id out and plan-build picks a new one",
            code=ExitCode.USAGE,
        )
    # not in the pin's message (made meanwhile): a baseline recovered from it counts again
    base = replace(base, pre_existing=counted[0] if counted else None)
    save(repo, base)
    return base


def save(repo: Repo, base: Baseline) -> None:
    fsutil.write_json(repo.in_state(meta_path(repo, base.id)), base.as_json(), sort_keys=True)


def pre_existing(repo: Repo, base: Baseline) -> int:
    """How many paths had uncommitted changes when the session began (kept apart)."""
    if base.pre_existing is not None:
        return base.pre_existing
    return len(snapshot.changed_paths(repo, base.head_tree, base.worktree_tree))


def _ref_target(repo: Repo, ref: str) -> str | None:
    r = repo.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return r.stdout.strip() or None


def _damaged(sid: str, why: str) -> PlanBuildError:
    return PlanBuildError(
        f"the baseline of session {sid} is damaged: {why}",
        "start a new session baseline (plan-build baseline); your files were not touched",
        code=ExitCode.BLOCKED,
    )


def load(repo: Repo, session_id: str) -> Baseline:
    """The baseline of `session_id`, checked against its pin (metadata recovered from the pin)."""
    sid = validate_id(session_id)
    path = meta_path(repo, sid)
    target = _ref_target(repo, REF_PREFIX + sid)
    if path.exists():
        try:
            base = Baseline.from_json(fsutil.read_json(path))
        except fsutil.StateFileError as exc:
            raise _damaged(sid, f"{path} cannot be read ({exc.why})") from exc
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise _damaged(sid, f"{path} cannot be read ({exc})") from exc
        if base.committed:
            return base
        if target is None:
            raise _damaged(sid, f"{REF_PREFIX + sid} is missing")
        if target != base.pin:
            raise _damaged(sid, f"{REF_PREFIX + sid} was moved")
        return base
    if target is None:
        raise PlanBuildError(
            f"there is no session {sid} in this repository",
            f"check {ENV_VAR}, or unset it to use this worktree's latest session",
            code=ExitCode.USAGE,
        )
    # The metadata file was lost (e.g. a cleaned state dir): the pin's message carries it.
    message = repo.git("cat-file", "commit", target).stdout
    try:
        data = fsutil.loads_json(message.split("\n\n", 2)[-1].strip(), Path(REF_PREFIX + sid))
        base = Baseline.from_json({**data, "pin": target})
    except (fsutil.StateFileError, ValueError, TypeError) as exc:
        raise _damaged(sid, "its metadata cannot be recovered") from exc
    base = replace(base, pre_existing=pre_existing(repo, base))  # not in the pin's message
    save(repo, base)
    return base


def all_baselines(repo: Repo) -> list[Baseline]:
    """Every readable baseline of this repository (all worktrees), oldest first."""
    found: list[Baseline] = []
    root = sessions_dir(repo)
    if root.is_dir():
        for meta in root.glob("*/baseline.json"):
            try:
                found.append(Baseline.from_json(fsutil.read_json(meta)))
            except (OSError, ValueError, TypeError, AttributeError, fsutil.StateFileError):
                continue  # damaged: `load` names it when that session is asked for
    return sorted(found, key=lambda b: (b.created, b.id))


def current(repo: Repo, env: Mapping[str, str], *, allow_committed: bool = False) -> Baseline:
    """The session this command is about: PLAN_BUILD_SESSION, else this worktree's latest."""
    sid = env.get(ENV_VAR, "").strip()
    if sid:
        base = load(repo, sid)
        if Path(base.git_dir) != repo.git_dir:
            raise PlanBuildError(
                f"session {sid} (from {ENV_VAR}) belongs to the worktree at {base.worktree}",
                f"run this in that worktree, or unset {ENV_VAR} to use this worktree's session",
                code=ExitCode.USAGE,
            )
    else:
        mine = [b for b in all_baselines(repo) if Path(b.git_dir) == repo.git_dir]
        if not mine:
            raise PlanBuildError(
                f"no session baseline for the worktree at {repo.root}",
                "start a session (plan-build plan or architect), or take one: plan-build baseline",
                code=ExitCode.USAGE,
            )
        base = load(repo, mine[-1].id)
    if base.committed and not allow_committed:
        raise PlanBuildError(
            f"session {base.id} was already committed as {base.committed[:12]}",
            "start a new session (or take a new baseline: plan-build baseline)",
            code=ExitCode.USAGE,
        )
    return base


def mark_committed(
    repo: Repo, base: Baseline, commit: str, *, approved: str | None = None
) -> Baseline:
    """Record the session's one commit and drop its pin (the baseline has served its purpose)."""
    done = replace(base, committed=commit, committed_at=clock.stamp(), approved=approved)
    save(repo, done)
    repo.git("update-ref", "-d", base.ref, base.pin, check=False)
    shutil.rmtree(sessions_dir(repo) / base.id / STATUS_INDEX, ignore_errors=True)
    return done


__all__ = [
    "ENV_VAR",
    "REF_PREFIX",
    "Baseline",
    "all_baselines",
    "busy_error",
    "busy_state",
    "capture",
    "conflicts_error",
    "current",
    "load",
    "mark_committed",
    "new_id",
    "pre_existing",
    "require_settled",
    "validate_id",
]
