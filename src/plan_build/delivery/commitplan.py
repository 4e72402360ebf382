"""The commit's plan: HEAD plus the session's edits, as a tree built in a temporary index.

For a file only the session touched, its current version; for a file that also had
uncommitted edits before the session, HEAD's version with only the session's hunks spliced in
(`hunks`), or a refusal naming the file and lines when the two sets of edits overlap or adjoin.
The user's index entries for the committed paths are planned here too, so `commit` only
publishes what this module decided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from plan_build.core import hunks, snapshot
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.delivery import intended as change_mod
from plan_build.delivery.baseline import Baseline
from plan_build.delivery.intended import Change, Entry, display_path


@dataclass(frozen=True)
class Overlap:
    path: str
    detail: str
    vanished: bool = False  # the baseline held the file and the work tree no longer does

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


@dataclass(frozen=True)
class Spliced:
    """Each path's committed version and the user's index entry, and the paths that overlap."""

    pre: dict[str, tuple[Entry | None, Entry | None]]  # changes from before the session
    commit_entries: list[tuple[str, Entry | None]]
    index_entries: list[tuple[str, Entry | None]]
    overlaps: list[Overlap]


def splice(repo: Repo, base: Baseline, change: Change) -> Spliced:
    """The session's edits spliced into HEAD's versions; blobs only, no index, no tree."""
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
            overlaps.append(Overlap(path, exc.detail, b_entry is not None and c_entry is None))
            continue
        commit_entries.append((path, r_entry))
        index_entries.append((path, i_entry))
    return Spliced(pre, commit_entries, index_entries, overlaps)


def overlap_error(overlaps: list[Overlap]) -> PlanBuildError:
    listed = "\n    ".join(str(o) for o in overlaps[:10])
    more = f"\n    and {len(overlaps) - 10} more" if len(overlaps) > 10 else ""
    gone = [o.path for o in overlaps if o.vanished]
    restore = (
        f"; {len(gone)} of these file(s) vanished from the work tree: `plan-build checkpoints` "
        "lists what was recorded before each agent write, and `plan-build restore` brings it "
        "back"
        if gone
        else ""
    )
    return PlanBuildError(
        f"the session's change overlaps work that was uncommitted before it started; "
        f"nothing was committed:\n    {listed}{more}",
        "commit by hand (git add -p) or move one of the edits apart so an unchanged line "
        f"separates them, then run plan-build commit again{restore}",
        code=ExitCode.BLOCKED,
    )


def plan_of(repo: Repo, base: Baseline, change: Change, spliced: Spliced) -> Plan:
    """The commit's tree from a splice without overlaps, and what the commit leaves alone."""
    if spliced.overlaps:
        raise overlap_error(spliced.overlaps)
    head_tree, commit_entries = base.head_tree, spliced.commit_entries
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
    kept = [p for p in spliced.pre if p not in {p2 for p2, _ in commit_entries}]
    return Plan(base, change, new_tree, commit_entries, spliced.index_entries, kept)


def build_plan(repo: Repo, base: Baseline, change: Change) -> Plan:
    """The commit's tree and the user's index afterwards, or a refusal naming every overlap."""
    return plan_of(repo, base, change, splice(repo, base, change))


__all__ = ["Overlap", "Plan", "Spliced", "build_plan", "overlap_error", "plan_of", "splice"]
