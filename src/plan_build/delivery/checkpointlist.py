"""`checkpoints`: each checkpoint with its time, why it was taken, the tool calls that followed
it (the hook's call log) and what changed between it and the next one (or now)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from plan_build.core import checkpoint
from plan_build.core.checkpoint import git_bytes
from plan_build.core.gitrepo import Repo

CALLS_SHOWN = 3
NAMES_SHOWN = 3


@dataclass(frozen=True)
class Row:
    number: int
    name: str
    at: str
    reason: str
    calls: list[str]  # the calls that followed it, oldest first (at most CALLS_SHOWN)
    more_calls: int
    since: dict[str, list[str]]  # "added", "changed", "removed" → paths, up to the next one

    def as_json(self) -> dict[str, object]:
        return {
            "number": self.number,
            "name": self.name,
            "at": self.at,
            "reason": self.reason,
            "calls": self.calls,
            "more_calls": self.more_calls,
            "since": self.since,
        }


def _tree(repo: Repo, commit: str) -> str:
    return git_bytes(repo, "rev-parse", f"{commit}^{{tree}}:worktree").decode().strip()


def difference(repo: Repo, old: str, new: str) -> dict[str, list[str]]:
    out = git_bytes(repo, "diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
    parts = out.split(b"\0")
    found: dict[str, list[str]] = {"added": [], "changed": [], "removed": []}
    key = {b"A": "added", b"D": "removed"}
    for status, path in zip(parts[0::2], parts[1::2], strict=False):
        if status:
            found[key.get(status[:1], "changed")].append(os.fsdecode(path))
    return found


def rows(repo: Repo, env: Mapping[str, str]) -> list[Row]:
    """Newest first; the newest compared with the work tree now (measured, not recorded)."""
    from plan_build.core import redact

    found = checkpoint.listed(repo)
    if not found:
        return []
    now_tree = checkpoint.take(repo, "checkpoints", record=False).tree
    log = checkpoint.calls(repo)
    out = []
    newer_tree = now_tree
    for i, cp in enumerate(found):
        tree = _tree(repo, cp.commit)
        followed = [
            redact.clean(f"{c.get('tool', '?')}: {c.get('what', '')}", env)
            for c in log
            if c.get("checkpoint") == cp.name
        ]
        reason = str(cp.meta.get("reason", ""))
        out.append(
            Row(
                number=i + 1,
                name=cp.name,
                at=cp.at,
                reason=reason,
                calls=followed[:CALLS_SHOWN],
                more_calls=max(0, len(followed) - CALLS_SHOWN),
                since=difference(repo, tree, newer_tree),
            )
        )
        newer_tree = tree
    return out


def lines(found: list[Row]) -> list[str]:
    """The rows as text, newest first."""
    if not found:
        return ["no checkpoints yet: they are taken before each write of a session's agents"]
    text = []
    for row in found:
        text.append(f"{row.number:>3}  {row.at}  {row.name}  {row.reason}")
        for call in row.calls:
            text.append(f"       then {call}")
        if row.more_calls:
            text.append(f"       … and {row.more_calls} more calls")
        changes = [
            f"{len(paths)} {kind} ({', '.join(paths[:NAMES_SHOWN])}"
            + (", …)" if len(paths) > NAMES_SHOWN else ")")
            for kind, paths in row.since.items()
            if paths
        ]
        since = "the work tree now" if row.number == 1 else "the next checkpoint"
        text.append(
            f"       since, up to {since}: " + ("; ".join(changes) if changes else "no change")
        )
    return text
