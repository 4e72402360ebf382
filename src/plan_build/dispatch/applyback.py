"""Bring a wave task's accepted result from its worktree into the user's work tree.

The task changed its worktree from `base` (the snapshot it started from) to `end`; meanwhile
the user, or another task of the wave that was applied first, may have changed the user's work
tree from `base` to what it is now. The task's change is applied only where the two do not
meet, by commit's rule (`delivery.hunks`): two edits of one file conflict when they overlap or
adjoin (no unchanged line between them); a file both sides added, removed, changed the mode of,
or that is binary, conflicts as a whole. Files only the task changed are applied with `git
apply --binary` (work tree only: the user's index is never touched; git refuses paths behind a
symbolic link); files both changed without meeting get both sets of edits, written atomically.
Nothing is written unless every path can be applied.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import checkpoint, hunks, proc
from plan_build.core.errors import PlanBuildError
from plan_build.core.fsutil import atomic_write
from plan_build.core.gitrepo import Repo, git_argv, git_env

Entry = tuple[str, str]  # mode, blob id


@dataclass
class Applied:
    paths: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # one line per path that could not go

    @property
    def ok(self) -> bool:
        return not self.conflicts


def _git_bytes(repo: Repo, *args: str, input: bytes | None = None) -> bytes:
    done = proc.run_bytes(
        git_argv(list(args)), cwd=repo.root, env=git_env(repo.env), input=input, check=True
    )
    return done.stdout


def _entries(repo: Repo, tree: str, paths: Sequence[str]) -> dict[str, Entry]:
    if not paths:
        return {}
    out = _git_bytes(repo, "ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths)
    found: dict[str, Entry] = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, _kind, oid = meta.decode().split()
        found[name.decode("utf-8", "surrogateescape")] = (mode, oid)
    return found


def _blob(repo: Repo, oid: str) -> bytes:
    return _git_bytes(repo, "cat-file", "blob", oid)


def _binary(data: bytes) -> bool:
    return b"\0" in data[:8000]


def _hunks(repo: Repo, old: str, new: str) -> list[hunks.Hunk]:
    diff = _git_bytes(
        repo, "diff", "-U0", "-a", "--no-color", "--no-ext-diff", "--no-textconv", old, new
    )
    return hunks.parse_u0(diff)


def _merge(
    repo: Repo, path: str, *, b: Entry | None, t: Entry | None, u: Entry | None, who: str, me: str
) -> bytes | str:
    """The file with both edits, or a line saying why they cannot both go in. `who` is the
    other side: "you" or a task id."""
    whose = "your" if who == "you" else f"{who}'s"
    if b is None:
        return f"`{path}`: {me} and {who} both added it"
    if t is None or u is None:
        return f"`{path}`: {me} and {who} both changed it, and one of them removed it"
    if not (b[0] == t[0] == u[0]) or b[0] not in ("100644", "100755"):
        return f"`{path}`: {me} and {who} both changed it, and its type or mode differs"
    base, mine, theirs = _blob(repo, b[1]), _blob(repo, t[1]), _blob(repo, u[1])
    if any(_binary(x) for x in (base, mine, theirs)):
        return f"`{path}`: {me} and {who} both changed it (binary file)"
    base_l, mine_l, theirs_l = (
        hunks.split_lines(base),
        hunks.split_lines(mine),
        hunks.split_lines(theirs),
    )
    mh, th = _hunks(repo, b[1], t[1]), _hunks(repo, b[1], u[1])
    try:
        hunks.validate(mh, base_l, mine_l)
        hunks.validate(th, base_l, theirs_l)
    except ValueError as exc:
        return f"`{path}`: the two sets of edits cannot be separated reliably ({exc})"
    pairs = hunks.conflicts(mh, th)
    if pairs:
        x, y = pairs[0]
        return (
            f"`{path}`: {me}'s edit of {x.base_lines()} meets {whose} edit of {y.base_lines()} "
            "(edits must be separated by an unchanged line)"
        )
    return hunks.splice(base_l, mine_l, mh, theirs_l, th)


def apply(
    user: Repo,
    *,
    task_id: str,
    base: str,
    end: str,
    now: str,
    paths: Sequence[str],
    applied_by: Mapping[str, str],
) -> Applied:
    """Apply `base`→`end` (only `paths`) onto the user's work tree, which is `now`.
    `applied_by` names the task that applied a path earlier in this wave (else it is the
    user's edit)."""
    result = Applied()
    if not paths:
        return result
    checkpoint.take(user, f"before applying {task_id}'s result", details={"task": task_id})
    theirs = set(_changed(user, base, now))
    mine_only = [p for p in paths if p not in theirs]
    both = [p for p in paths if p in theirs]
    b_e, t_e, u_e = _entries(user, base, both), _entries(user, end, both), _entries(user, now, both)
    merged: dict[str, bytes] = {}
    for p in both:
        if t_e.get(p) == u_e.get(p):
            continue  # the same change on both sides: nothing to do
        who = applied_by.get(p)
        said = _merge(
            user, p, b=b_e.get(p), t=t_e.get(p), u=u_e.get(p), who=who or "you", me=task_id
        )
        if isinstance(said, str):
            result.conflicts.append(said)
        else:
            merged[p] = said
    if result.conflicts:
        return result
    if mine_only:
        patch = _git_bytes(
            user,
            "diff",
            "--binary",
            "--full-index",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            base,
            end,
            "--",
            *mine_only,
        )
        done = proc.run_bytes(
            git_argv(["apply", "--binary", "--whitespace=nowarn", "-"]),
            cwd=user.root,
            env=git_env(user.env),
            input=patch,
        )
        if not done.ok:
            told = done.stderr.strip().splitlines()
            first = told[0] if told else f"exit {done.returncode}"
            result.conflicts.append(f"git apply refused the change: {first}")
            return result
    for p, data in merged.items():
        target = user.inside(user.root / p)
        atomic_write(target, data, mode=os.stat(target).st_mode & 0o7777)
    result.paths = list(paths)
    return result


@dataclass
class IgnoredBack:
    brought: list[str] = field(default_factory=list)  # written into the user's tree
    kept: list[str] = field(default_factory=list)  # left in the worktree (see `why`)


def ignored_back(
    user: Repo, wt: Repo, paths: Sequence[str], *, copied: Sequence[str], since_ns: int
) -> IgnoredBack:
    """Ignored files a verified task changed inside its scope (`paths`, relative), brought
    into the user's tree by the same rule as tracked ones, a whole file at a time: a file the
    user's tree lacks is written; a file the worktree got as a copy of the user's
    (`.worktreeinclude`, `copied`) replaces the user's only when the user's has not changed
    since the wave began (`since_ns`, its ctime). Anything else (the user changed it too, it
    was removed, it is not a regular file, or it is behind a symbolic link) stays in the
    worktree, named in `kept`."""
    out = IgnoredBack()
    for p in paths:
        src = wt.root / p
        try:
            target = user.inside(user.root / p)
            st = src.lstat()
        except (OSError, PlanBuildError):
            out.kept.append(p)
            continue
        if not stat.S_ISREG(st.st_mode):
            out.kept.append(p)
            continue
        try:
            mine = target.lstat()
        except FileNotFoundError:
            mine = None
        except OSError:
            out.kept.append(p)
            continue
        if mine is not None and stat.S_ISREG(mine.st_mode) and _same(target, src):
            continue  # nothing to bring
        from_copy = any(p == c or p.startswith(c + "/") for c in copied)
        if mine is not None and not (
            from_copy and stat.S_ISREG(mine.st_mode) and mine.st_ctime_ns < since_ns
        ):
            out.kept.append(p)
            continue
        atomic_write(target, src.read_bytes(), mode=st.st_mode & 0o7777)
        out.brought.append(p)
    return out


def _same(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _changed(repo: Repo, old: str, new: str) -> list[str]:
    out = _git_bytes(repo, "diff-tree", "-r", "--no-renames", "--name-only", "-z", old, new)
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


__all__ = ["Applied", "IgnoredBack", "apply", "ignored_back"]
