"""`restore [CHECKPOINT] [PATH…]`: the work tree and the user's index as a checkpoint has them.

Byte for byte (raw blobs: binary, CRLF, modes, symlinks, any name), without moving HEAD; files
written through fsutil (atomic, never through a symlink out of the repository), the index
replaced the way git replaces it (its `.lock`). Before writing, the state now is itself
checkpointed, so a restore is undone by restoring that one.

Which checkpoint: the one named (its name, a unique prefix of it, or its number in
`plan-build checkpoints`, 1 the newest); else the newest that differs from the state now (the
hook checkpoints the damage too, before the next tool call, so the newest is often the damage
itself).

Work done since the checkpoint is never overwritten unasked: a path restore would change whose
content now is neither empty, nor HEAD's, nor in the checkpoint's index is refused without
`--force` (with it, the checkpoint taken just before holds that content).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import checkpoint, fsutil
from plan_build.core.checkpoint import Checkpoint, git_bytes
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
SHOWN = 10


@dataclass(frozen=True)
class Change:
    path: str
    mode: str  # the checkpoint's mode ("000000": not in the checkpoint, so removed)
    sha: str  # the checkpoint's blob
    now_mode: str
    now_sha: str

    @property
    def removes(self) -> bool:
        return self.mode == "000000"


@dataclass
class Plan:
    target: Checkpoint
    changes: list[Change]
    index: bool  # the user's index is replaced too
    at_risk: list[str] = field(default_factory=list)  # work done since, overwritten
    before: str | None = None  # the checkpoint of the state just before (not on a dry run)


def resolve(found: Sequence[Checkpoint], name: str) -> Checkpoint:
    if name.isdigit() and 1 <= int(name) <= len(found) and len(name) < 6:
        return found[int(name) - 1]
    hits = [c for c in found if name in (c.name, c.ref)]
    hits = hits or [c for c in found if c.name.startswith(name) or c.commit.startswith(name)]
    if len(hits) == 1:
        return hits[0]
    what = "matches several checkpoints" if hits else "is no checkpoint"
    raise PlanBuildError(
        f"{name!r} {what}",
        "run `plan-build checkpoints` and name one by its number or its full name",
        code=ExitCode.USAGE,
    )


def _in_scope(path: str, paths: Sequence[str]) -> bool:
    return not paths or any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths)


def _blobs_at(
    repo: Repo, treeish: str, paths: Sequence[str], index: bool = False
) -> dict[str, set[str]]:
    """path → the blob ids `treeish` (a tree, or with `index` an index blob) has at `paths`."""
    found: dict[str, set[str]] = {}
    if not paths:
        return found
    if index:
        with fsutil.owned_tempdir("plan-build-index-") as tmp:
            (tmp / "index").write_bytes(git_bytes(repo, "cat-file", "blob", treeish))
            out = git_bytes(
                repo,
                "ls-files",
                "-z",
                "--stage",
                "--",
                *paths,
                overlay={"GIT_INDEX_FILE": str(tmp / "index")},
            )
    else:
        out = git_bytes(repo, "ls-tree", "-r", "-z", treeish, "--", *paths)
    for record in out.split(b"\0"):
        if b"\t" in record:
            meta, path = record.split(b"\t", 1)
            sha = meta.split()[2 if not index else 1].decode()
            found.setdefault(os.fsdecode(path), set()).add(sha)
    return found


def plan(repo: Repo, name: str | None, paths: Sequence[str], *, dry_run: bool = False) -> Plan:
    """What restoring would write; the state now checkpointed first unless `dry_run`."""
    # a number means the checkpoint the user saw in `checkpoints`: resolved before the state
    # now is checkpointed, which would put a new checkpoint first and move every number
    target = resolve(checkpoint.listed(repo), name) if name is not None else None
    now = checkpoint.take(repo, "before restore", record=not dry_run)
    found = checkpoint.listed(repo)
    if not found:
        raise PlanBuildError(
            "this repository has no checkpoints yet",
            "they are taken before each write of a plan-build session's agents",
            code=ExitCode.BLOCKED,
        )
    if target is None:
        differing = [c for c in found if _state(repo, c) != (now.tree, now.index)]
        if not differing:
            raise PlanBuildError(
                "the work tree and index are as every checkpoint has them: nothing to restore",
                "run `plan-build checkpoints` to see them",
                code=ExitCode.BLOCKED,
            )
        target = differing[0]
    target_tree, target_index = _state(repo, target)
    listed_then = target.meta.get("skipped")
    then = [str(p) for p in listed_then] if isinstance(listed_then, list) else []
    skipped = set(then) | set(now.skipped)
    out = git_bytes(repo, "diff-tree", "-r", "-z", "--no-renames", target_tree, now.tree)
    parts = out.split(b"\0")
    changes = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, old_sha, new_sha, _ = meta[1:].decode().split(" ", 4)
        rel = os.fsdecode(path)
        if _in_scope(rel, paths) and rel not in skipped:
            changes.append(Change(rel, old_mode, old_sha, new_mode, new_sha))
    index_changes = target_index != now.index
    result = Plan(target, changes, index=index_changes and target_index is not None)
    result.at_risk = _at_risk(repo, changes, target_index)
    if result.index and target_index is not None:
        result.at_risk += _staged_at_risk(repo, target_index, paths)
    if not dry_run and now.ref != target.ref:
        result.before = now.ref.rsplit("/", 1)[-1] if now.ref else None
    return result


def _state(repo: Repo, cp: Checkpoint) -> tuple[str, str | None]:
    out = git_bytes(repo, "ls-tree", "-z", cp.commit).split(b"\0")
    tree, index = "", None
    for record in out:
        if b"\t" in record:
            meta, name = record.split(b"\t", 1)
            sha = meta.split()[2].decode()
            if name == b"worktree":
                tree = sha
            elif name == b"index":
                index = sha
    return tree, index


def _at_risk(repo: Repo, changes: Sequence[Change], target_index: str | None) -> list[str]:
    """Paths whose content now would be lost: not empty, not HEAD's, not in the checkpoint's
    index (what `git reset --hard`, `checkout --`, `stash` and truncation leave is safe)."""
    candidates = [
        c for c in changes if c.now_mode != "000000" and c.now_sha not in (EMPTY_BLOB, c.sha)
    ]
    # a path the checkpoint has but the tree now lacks may still hold an ignored file
    for c in changes:
        if c.now_mode == "000000":
            full = repo.root / c.path
            if full.is_symlink() or full.is_file():
                sha = git_bytes(repo, "hash-object", "--no-filters", "--", str(full))
                if full.is_symlink():
                    sha = git_bytes(
                        repo, "hash-object", "--stdin", input=os.fsencode(os.readlink(full))
                    )
                now_sha = sha.decode().strip()
                if now_sha not in (EMPTY_BLOB, c.sha):
                    candidates.append(Change(c.path, c.mode, c.sha, "100644", now_sha))
            elif full.is_dir() and any(full.iterdir()):
                candidates.append(Change(c.path, c.mode, c.sha, "040000", ""))
    if not candidates:
        return []
    names = [c.path for c in candidates]
    head = repo.head()
    safe = _blobs_at(repo, head, names) if head else {}
    if target_index:
        for path, shas in _blobs_at(repo, target_index, names, index=True).items():
            safe.setdefault(path, set()).update(shas)
    return sorted(c.path for c in candidates if c.now_sha not in safe.get(c.path, set()))


def _index_entries(repo: Repo, paths: Sequence[str], index: Path | None = None) -> dict[str, str]:
    overlay = {"GIT_INDEX_FILE": str(index)} if index is not None else None
    out = git_bytes(repo, "ls-files", "-z", "--stage", "--", *paths, overlay=overlay)
    found: dict[str, str] = {}
    for record in out.split(b"\0"):
        if b"\t" in record:
            meta, path = record.split(b"\t", 1)
            found[os.fsdecode(path)] = meta.decode()
    return found


def _staged_at_risk(repo: Repo, target_index: str, paths: Sequence[str]) -> list[str]:
    """Staged content the index replacement would drop: in the index now, but neither in
    the checkpoint's index nor HEAD's (named `PATH (staged)`)."""
    now = _index_entries(repo, paths)
    with fsutil.owned_tempdir("plan-build-index-") as tmp:
        (tmp / "index").write_bytes(git_bytes(repo, "cat-file", "blob", target_index))
        then = _index_entries(repo, paths, tmp / "index")
    differing = [p for p, meta in now.items() if then.get(p) != meta]
    if not differing:
        return []
    head = repo.head()
    safe = _blobs_at(repo, head, differing) if head else {}
    return [f"{p} (staged)" for p in differing if now[p].split()[1] not in safe.get(p, set())]


def refuse_at_risk(found: Plan) -> None:
    shown = ", ".join(found.at_risk[:SHOWN])
    more = f" and {len(found.at_risk) - SHOWN} more" if len(found.at_risk) > SHOWN else ""
    kept = (
        f" (the work now is kept first as checkpoint {found.before}: `plan-build restore "
        f"{found.before}` brings it back)"
        if found.before
        else ""
    )
    raise PlanBuildError(
        f"restoring {found.target.name} would overwrite work done since it: {shown}{more}",
        f"to overwrite it anyway, run `plan-build restore {found.target.name} --force`{kept}; "
        "or name only the paths to bring back: `plan-build restore "
        f"{found.target.name} PATH…`",
        code=ExitCode.BLOCKED,
    )


def apply(repo: Repo, found: Plan, paths: Sequence[str]) -> None:
    """Write the plan: removals deepest first, then every file, then the user's index."""
    root = repo.root
    for change in sorted(
        (c for c in found.changes if c.removes), key=lambda c: c.path, reverse=True
    ):
        full = repo.inside((root / change.path).parent) / Path(change.path).name
        if full.is_symlink() or full.is_file():
            full.unlink()
        _drop_empty_parents(root, full.parent)
    writes = [c for c in found.changes if not c.removes and c.mode != "160000"]
    blobs = _read_blobs(repo, [c.sha for c in writes])
    for change in writes:
        full = repo.inside((root / change.path).parent) / Path(change.path).name
        if full.is_dir() and not full.is_symlink():
            try:
                full.rmdir()
            except OSError:
                raise PlanBuildError(
                    f"{change.path} is a directory holding files no checkpoint has (ignored ones)",
                    f"move them away, then retry: ls -A {change.path}",
                    code=ExitCode.BLOCKED,
                ) from None
        data = blobs[change.sha]
        if change.mode == "120000":
            fsutil.atomic_symlink(full, os.fsdecode(data))
        else:
            fsutil.atomic_write(full, data, mode=fsutil.file_mode(change.mode == "100755"))
    if found.index or paths:
        _restore_index(repo, found, paths)


def _drop_empty_parents(root: Path, folder: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _read_blobs(repo: Repo, shas: Sequence[str]) -> dict[str, bytes]:
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    out = git_bytes(repo, "cat-file", "--batch", input="".join(s + "\n" for s in wanted).encode())
    found: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        sha, _, size = out[at:end].decode().split(" ")
        start = end + 1
        found[sha] = out[start : start + int(size)]
        at = start + int(size) + 1
    return found


def _restore_index(repo: Repo, found: Plan, paths: Sequence[str]) -> None:
    _, target_index = _state(repo, found.target)
    user_index = repo.git_dir / "index"
    if target_index is None:
        return
    data = git_bytes(repo, "cat-file", "blob", target_index)
    if paths:
        with fsutil.owned_tempdir("plan-build-index-") as tmp:
            (tmp / "then").write_bytes(data)
            if user_index.exists():
                shutil.copy2(user_index, tmp / "now")
            now = {"GIT_INDEX_FILE": str(tmp / "now")}
            then = {"GIT_INDEX_FILE": str(tmp / "then")}
            current = git_bytes(repo, "ls-files", "-z", "--", *paths, overlay=now)
            wanted = git_bytes(repo, "ls-files", "-z", "--stage", "--", *paths, overlay=then)
            records = [f"0 {checkpoint.ZERO}\t".encode() + p for p in current.split(b"\0") if p]
            for record in wanted.split(b"\0"):
                if b"\t" in record:
                    meta, path = record.split(b"\t", 1)
                    mode, sha, stage = meta.decode().split()
                    records.append(f"{mode} {sha} {stage}\t".encode() + path)
            payload = b"".join(r + b"\0" for r in records)
            git_bytes(repo, "update-index", "-z", "--index-info", input=payload, overlay=now)
            data = (tmp / "now").read_bytes()
    fsutil.replace_locked(user_index, data)


def names_checkpoint(found: Sequence[Checkpoint], word: str) -> bool:
    """Whether `word` is a checkpoint (its number, name or a prefix) rather than a path."""
    try:
        resolve(found, word)
    except PlanBuildError:
        return False
    return True


def repo_path(repo: Repo, cwd: Path, word: str) -> str:
    """A PATH argument (relative to where the command runs) as a path in the repository."""
    full = os.path.normpath(os.path.join(cwd, word))
    rel = os.path.relpath(full, repo.root)
    if rel == ".." or rel.startswith(".." + os.sep):
        raise PlanBuildError(
            f"{word} is outside the repository ({repo.root})",
            "name paths inside the work tree",
            code=ExitCode.USAGE,
        )
    return "" if rel == "." else rel.replace(os.sep, "/")


def describe(found: Plan) -> list[str]:
    """One line per path restore writes or removes, and one for the index."""
    out = []
    for c in found.changes:
        if c.removes:
            out.append(f"remove {c.path}")
        elif c.mode == "160000":
            out.append(f"leave {c.path} (a nested repository: its commit is {c.sha[:12]})")
        else:
            kind = {"120000": "symlink", "100755": "executable"}.get(c.mode, "file")
            verb = "write" if c.now_mode == "000000" else "overwrite"
            out.append(f"{verb} {c.path} ({kind})")
    if found.index:
        out.append("replace your index (what is staged) with the checkpoint's")
    if not out:
        out.append("nothing: the work tree and index already match it")
    return out


__all__ = [
    "Change",
    "Plan",
    "apply",
    "describe",
    "names_checkpoint",
    "plan",
    "refuse_at_risk",
    "repo_path",
    "resolve",
]
