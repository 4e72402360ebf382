"""Checkpoints: the work tree and the user's index, recorded where no agent process can write.

A checkpoint is a commit under `refs/plan-build/checkpoints/<UTC time>-<n>` in the repository's
own object store (never pushed: nothing in plan-build pushes). Its tree holds `worktree` (every
tracked and untracked, not ignored file, its mode and symlinks, as raw bytes: `git hash-object
--no-filters`, so no eol or clean filter changes a byte) and `index` (the user's index file
itself, as a blob: byte for byte, stages and flags included). Its message is JSON: when, why
(the tool call about to run, a dispatch, a restore) and what was left out.

Taken before every Claude tool call that can write (the `checkpoint` hook, which Claude runs
outside the agent's sandbox), before each Codex run of a dispatch, before a wave's result is
applied back and before `restore` writes; only when something changed since the last one:

- "unchanged" is decided from ctimes: one `find -newerct` over the work tree (ctimescan), .git
  and wholly ignored directories pruned, and the stat of the user's index. A write, chmod,
  rename or deletion always moves a ctime (of the file, or of its directory);
- a change costs the changed files' hashing plus one `ls-tree`/`ls-files` per changed
  directory: a private index under `<common dir>/plan-build/checkpoints/` holds the last
  recorded tree, updated in place. When the user's index, an ignore file or
  .git/info/exclude changed (what counts as untracked may have), the whole listing is asked
  again: about one `git status`.

Not kept: ignored files and directories (node_modules, .venv, .env), files over MAX_FILE
(listed as skipped), the contents of nested repositories (a gitlink is kept), empty
directories, plan-build's own state (`.claude/codex-review`), and the empty mount-point files
Claude's sandbox puts in the top directory while a command runs. Pruned on every new
checkpoint: the newest KEEP_ALWAYS stay; beyond them, any older than MAX_AGE_DAYS or past
MAX_COUNT go (their objects then age out with git's own gc). docs/adr/0198.

(over 400 lines on purpose: taking, listing and pruning share one private index, one stamp
and one lock, and the hook imports this one module)
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import ctimescan, fsutil, proc
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo, git_argv, git_env

REF_PREFIX = "refs/plan-build/checkpoints/"
MAX_FILE = 64 * 1024 * 1024  # bytes: a larger file is listed as skipped, never copied
KEEP_ALWAYS = 20
MAX_COUNT = 200
MAX_AGE_DAYS = 7
CLOCK_MARGIN_NS = 50_000_000  # file timestamps come from the kernel's coarse clock
TOOL_STATE = (".claude/codex-review",)
# Empty files Claude Code's sandbox creates in the working directory while a command runs
# (bind-mount points), gone afterwards: never the user's files while empty and untracked.
MOUNT_POINTS = frozenset(
    {
        ".bash_profile",
        ".bashrc",
        ".gitconfig",
        ".gitmodules",
        ".idea",
        ".mcp.json",
        ".profile",
        ".ripgreprc",
        ".vscode",
        ".zprofile",
        ".zshrc",
    }
)
IGNORE_FILES = (".gitignore",)
CALL_LOG = "calls.jsonl"  # the hook's note of each call (startup/checkpointhook.py)
_IDENTITY = {
    "GIT_AUTHOR_NAME": "plan-build",
    "GIT_AUTHOR_EMAIL": "plan-build@localhost",
    "GIT_COMMITTER_NAME": "plan-build",
    "GIT_COMMITTER_EMAIL": "plan-build@localhost",
}
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
ZERO = "0" * 40


@dataclass(frozen=True)
class Taken:
    """What one call found: the tree and index recorded now, and the checkpoint (new or not)."""

    tree: str
    index: str | None  # the blob of the user's index file; None when there is none
    ref: str | None  # the newest checkpoint's ref after this call
    new: bool  # this call recorded a new checkpoint
    skipped: tuple[str, ...] = ()


@dataclass
class _Stamp:
    taken_ns: int
    tree: str
    index: str | None
    index_stat: list[int]
    ignore_stat: list[int]
    prune: list[str]
    skipped: list[str]
    last_ref: str | None = None
    last_tree: str | None = None
    last_index: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


def _linked(repo: Repo) -> bool:
    return repo.git_dir.resolve() != repo.common_dir.resolve()


def state_dir(repo: Repo) -> Path:
    """The stamp, private index, lock and call log of this work tree's checkpoints."""
    if _linked(repo):
        return repo.state_dir / "worktree-checkpoints" / repo.git_dir.name
    return repo.state_dir / "checkpoints"


def ref_prefix(repo: Repo) -> str:
    """This work tree's checkpoint refs (a linked worktree has its own, by its name)."""
    if _linked(repo):
        return f"refs/plan-build/worktree-checkpoints/{repo.git_dir.name}/"
    return REF_PREFIX


def before_run(root: Path, env: Mapping[str, str] | None, reason: str) -> None:
    """A checkpoint of the work tree at `root` before a program of plan-build's runs there
    (a dispatch's Codex); none in a wave's own worktree under the git common dir, whose
    result is checkpointed where it is applied back."""
    from plan_build.core.gitrepo import discover

    repo = discover(root, env)
    if repo.common_dir.resolve() in repo.root.resolve().parents:
        return
    take(repo, reason)


def git_bytes(
    repo: Repo,
    *args: str,
    input: bytes | None = None,
    overlay: Mapping[str, str] | None = None,
    check: bool = True,
) -> bytes:
    env = git_env(repo.env)
    env["GIT_LITERAL_PATHSPECS"] = "1"
    env.update(overlay or {})
    done = proc.run_bytes(
        git_argv(args), cwd=repo.root, env=env, input=input, check=check, timeout=600
    )
    return done.stdout


def _stat(path: Path) -> list[int]:
    try:
        st = path.stat()
    except OSError:
        return [0, 0, 0, 0]
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read_stamp(path: Path) -> _Stamp | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return _Stamp(**data)
    except (OSError, ValueError, TypeError):
        return None


@contextmanager
def locked(repo: Repo) -> Iterator[Path]:
    """The checkpoint folder, held by one process at a time (Claude runs hooks in parallel)."""
    import fcntl

    folder = repo.in_state(state_dir(repo))
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PlanBuildError(
                        "another plan-build process has held the checkpoint lock for 30 s",
                        "wait for it to finish, then retry",
                        code=ExitCode.BLOCKED,
                    ) from None
                time.sleep(0.01)
        yield folder
    finally:
        os.close(fd)


def take(
    repo: Repo, reason: str, *, details: Mapping[str, object] | None = None, record: bool = True
) -> Taken:
    """Record a checkpoint of the work tree and the user's index if either changed since the
    last one. `record=False` only measures (restore --dry-run): no ref, no pruning."""
    with locked(repo) as folder:
        return _take(repo, folder, reason, dict(details or {}), record)


def _take(repo: Repo, folder: Path, reason: str, details: dict[str, object], record: bool) -> Taken:
    stamp_path = folder / "stamp.json"
    private = folder / "index"
    stamp = _read_stamp(stamp_path)
    user_index = repo.git_dir / "index"
    index_stat = _stat(user_index)
    ignore_stat = _stat(repo.common_dir / "info" / "exclude")
    started = time.time_ns() - CLOCK_MARGIN_NS
    overlay = {"GIT_INDEX_FILE": str(private)}
    if stamp is None or not private.exists():
        private.unlink(missing_ok=True)
        tree, skipped, prune, count = _full(repo, overlay, None, ())
        stamp = _Stamp(started, tree, None, [0, 0, 0, 0], ignore_stat, prune, skipped)
        stamp.extra["count"] = count
    else:
        changed = ctimescan.changed_in_tree(
            repo.root, stamp.taken_ns, [".git", *TOOL_STATE, *stamp.prune], repo.env
        )
        relisting = index_stat != stamp.index_stat or ignore_stat != stamp.ignore_stat
        relisting = relisting or any(p.rsplit("/", 1)[-1] in IGNORE_FILES for _, p in changed)
        found = _incremental(repo, overlay, stamp, changed) if changed and not relisting else None
        if relisting or (changed and found is None):
            tree, skipped, prune, count = _full(repo, overlay, stamp.tree, changed)
            stamp.prune = prune
            stamp.extra["count"] = count
        elif found is not None:
            tree, skipped = found
        else:
            tree, skipped = stamp.tree, stamp.skipped
        stamp.tree, stamp.skipped, stamp.taken_ns = tree, skipped, started
        stamp.ignore_stat = ignore_stat
    if stamp.extra.get("top_of") != stamp.tree:  # the top names, for the hook's quick look
        names = git_bytes(repo, "ls-tree", "-z", "--name-only", stamp.tree).split(b"\0")
        stamp.extra["top"] = sorted(os.fsdecode(n) for n in names if n)
        stamp.extra["top_of"] = stamp.tree
    if index_stat != stamp.index_stat or stamp.index is None:
        stamp.index = _hash_index(repo, user_index)
        stamp.index_stat = index_stat
    new = False
    if record and (stamp.tree, stamp.index) != (stamp.last_tree, stamp.last_index):
        stamp.last_ref = _commit(repo, stamp, reason, details)
        stamp.last_tree, stamp.last_index = stamp.tree, stamp.index
        new = True
        prune_old(repo)
    fsutil.atomic_write(stamp_path, json.dumps(stamp.__dict__, sort_keys=True))
    return Taken(stamp.tree, stamp.index, stamp.last_ref, new, tuple(stamp.skipped))


def _hash_index(repo: Repo, path: Path) -> str | None:
    if not path.exists():
        return None
    out = git_bytes(repo, "hash-object", "-w", "--no-filters", "--", str(path))
    return out.decode().strip()


def _is_mount_point(repo: Repo, rel: str) -> bool:
    if rel not in MOUNT_POINTS:
        return False
    try:
        st = os.lstat(repo.root / rel)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def _entries(repo: Repo, paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """Index lines (`mode sha\\tpath`) for files in the work tree now, and the paths too large
    to copy. Missing paths are left out (the caller removes them)."""
    regular: list[str] = []
    modes: list[str] = []
    links: list[tuple[str, bytes]] = []
    skipped: list[str] = []
    for rel in paths:
        try:
            st = os.lstat(repo.root / rel)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            links.append((rel, os.fsencode(os.readlink(repo.root / rel))))
        elif stat.S_ISREG(st.st_mode):
            if st.st_size > MAX_FILE:
                skipped.append(rel)
                continue
            regular.append(rel)
            modes.append("100755" if st.st_mode & 0o100 else "100644")
    lines: list[str] = []
    if regular or links:
        with fsutil.owned_tempdir("plan-build-links-") as tmp:
            holders = []
            for i, (_, target) in enumerate(links):
                holder = tmp / str(i)
                holder.write_bytes(target)
                holders.append(str(holder))
            names = [str(repo.root / r) for r in regular] + holders
            stdin = b"".join(os.fsencode(n) + b"\n" for n in names)
            if any("\n" in n for n in names):
                raise PlanBuildError(
                    "a file name in the work tree holds a line break; checkpoints cannot record it",
                    "rename the file",
                    code=ExitCode.BLOCKED,
                )
            out = git_bytes(repo, "hash-object", "-w", "--no-filters", "--stdin-paths", input=stdin)
        shas = out.decode().split()
        for rel, mode, sha in zip(regular, modes, shas, strict=False):
            lines.append(f"{mode} {sha}\t{rel}")
        for (rel, _), sha in zip(links, shas[len(regular) :], strict=False):
            lines.append(f"120000 {sha}\t{rel}")
    return lines, skipped


def _listing(repo: Repo) -> tuple[dict[str, str], list[str]]:
    """What a checkpoint covers now: {path: gitlink sha or ""} for tracked and untracked, not
    ignored paths; and the wholly ignored directories (pruned from the ctime scan)."""
    found: dict[str, str] = {}
    staged = git_bytes(repo, "ls-files", "-z", "--stage")
    for record in staged.split(b"\0"):
        if b"\t" in record:
            meta, path = record.split(b"\t", 1)
            name = os.fsdecode(path)
            found[name] = meta.split()[1].decode() if meta.startswith(b"160000") else ""
    others = git_bytes(repo, "ls-files", "-z", "--others", "--exclude-standard")
    for record in others.split(b"\0"):
        name = os.fsdecode(record)
        if name and not name.endswith("/") and not _is_mount_point(repo, name):
            found.setdefault(name, "")
    ignored = git_bytes(
        repo, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"
    )
    prune = [os.fsdecode(r).rstrip("/") for r in ignored.split(b"\0") if r.endswith(b"/")]
    for skip in TOOL_STATE:
        for name in [n for n in found if n == skip or n.startswith(skip + "/")]:
            del found[name]
    return found, prune


def _private_entries(
    repo: Repo, overlay: Mapping[str, str], paths: Sequence[str] | None = None
) -> dict[str, str]:
    """The last recorded entries (all, or at and under `paths`): path → `mode sha stage`."""
    if paths is not None and not paths:
        return {}
    scope = ["--", *paths] if paths is not None else []
    out = git_bytes(repo, "ls-files", "-z", "--stage", *scope, overlay=overlay)
    found = {}
    for record in out.split(b"\0"):
        if b"\t" in record:
            meta, path = record.split(b"\t", 1)
            found[os.fsdecode(path)] = meta.decode()
    return found


def _full(
    repo: Repo, overlay: Mapping[str, str], tree: str | None, changed: Sequence[tuple[str, str]]
) -> tuple[str, list[str], list[str], int]:
    """The whole listing again; only files new to the private index or whose ctime moved are
    hashed (all of them the first time)."""
    listing, prune = _listing(repo)
    private = Path(overlay["GIT_INDEX_FILE"])
    before = _private_entries(repo, overlay) if tree is not None and private.exists() else {}
    moved = {p for kind, p in changed if kind != "d"}
    hash_these = [p for p, link in listing.items() if not link and (p not in before or p in moved)]
    lines, skipped = _entries(repo, hash_these)
    lines += [f"160000 {sha}\t{p}" for p, sha in listing.items() if sha]
    gone = [p for p in before if p not in listing]
    dirs = {p for kind, p in changed if kind == "d"}  # a removal moves its directory's ctime
    gone += [
        p
        for p in listing
        if p in before
        and (os.path.dirname(p) or ".") in dirs
        and not os.path.lexists(repo.root / p)
    ]
    present = {line.split("\t", 1)[1] for line in lines}
    gone += [p for p in hash_these if p not in present and p in before]
    return _update(repo, overlay, lines, gone), skipped, prune, len(listing)


def _listed_again(
    repo: Repo,
    before: Mapping[str, str],
    prefixes: set[str],
    prune: Sequence[str],
    top: set[str],
) -> tuple[list[str], list[str]]:
    """The recorded names in changed directories that went, and the names that came (`top`:
    the top directory's recorded names)."""
    children: dict[str, set[str]] = {p: set() for p in prefixes}
    children[""] = top
    for path in before:
        for prefix in prefixes - {""}:  # the names directly in each changed directory
            if path.startswith(prefix):
                children[prefix].add(path[len(prefix) :].split("/", 1)[0])
    gone: list[str] = []
    new: list[str] = []
    for prefix in prefixes:
        try:
            now = set(os.listdir(repo.root / prefix)) if prefix else set(os.listdir(repo.root))
        except OSError:
            now = set()
        gone += [prefix + name for name in children[prefix] - now]
        for name in now - children[prefix]:
            rel = prefix + name
            if rel == ".git" or rel in prune or _is_mount_point(repo, rel):
                continue
            new.append(rel)
    return gone, new


def _incremental(
    repo: Repo, overlay: Mapping[str, str], stamp: _Stamp, changed: Sequence[tuple[str, str]]
) -> tuple[str, list[str]] | None:
    """Only what the ctime scan named: changed files re-hashed, changed directories listed.
    None when an ignore file appeared or went (the whole listing must be asked again)."""
    files = {p for kind, p in changed if kind != "d"}
    dirs = {p for kind, p in changed if kind == "d"}
    scope = sorted(files | (dirs - {"."}))
    # only what the scan named is read back from the private index (all of it past a bound)
    before = _private_entries(repo, overlay, scope if len(scope) < 5000 else None)
    prefixes = {"" if p == "." else p + "/" for p in dirs}
    top: set[str] = set()
    if "." in dirs:  # the top directory's names, from the recorded tree itself
        listed_top = git_bytes(repo, "ls-tree", "-z", "--name-only", stamp.tree)
        top = {os.fsdecode(n) for n in listed_top.split(b"\0") if n}
    gone_names, new = _listed_again(repo, before, prefixes, stamp.prune, top)
    beneath = _private_entries(repo, overlay, [g for g in gone_names if g not in before])
    before = {**before, **beneath}
    gone = [p for p in before for g in gone_names if p == g or p.startswith(g + "/")]
    retyped = []
    for path in files:  # a directory that became a file or a link: what was under it went
        under = [p for p in before if p.startswith(path + "/")]
        if under:
            gone += under
            retyped.append(path)
    gone += [p[:-1] for p in prefixes if p[:-1] in before]  # a file that became a directory
    if any(p.rsplit("/", 1)[-1] in IGNORE_FILES for p in [*gone, *new]):
        return None
    if new:
        out = git_bytes(
            repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *new
        )
        new = sorted(
            {
                os.fsdecode(r)
                for r in out.split(b"\0")
                if r and not r.endswith(b"/") and not _is_mount_point(repo, os.fsdecode(r))
            }
        )
    known = [
        p
        for p in sorted(files)
        if (p in before and not before[p].startswith("160000")) or p in stamp.skipped
    ]
    lines, skipped = _entries(repo, [*known, *retyped, *(p for p in new if p not in known)])
    present = {line.split("\t", 1)[1] for line in lines}
    gone += [p for p in known if p not in present and p in before]
    skipped += [p for p in stamp.skipped if p not in files and (repo.root / p).exists()]
    if not lines and not gone:
        return stamp.tree, sorted(set(skipped))
    return _update(repo, overlay, lines, gone), sorted(set(skipped))


def _update(repo: Repo, overlay: Mapping[str, str], lines: list[str], gone: list[str]) -> str:
    records = [f"0 {ZERO}\t{p}" for p in sorted(set(gone))] + lines
    if records:
        payload = b"".join(os.fsencode(r) + b"\0" for r in records)
        git_bytes(repo, "update-index", "-z", "--index-info", input=payload, overlay=overlay)
    return git_bytes(repo, "write-tree", overlay=overlay).decode().strip()


def _commit(repo: Repo, stamp: _Stamp, reason: str, details: dict[str, object]) -> str:
    from plan_build.core import clock

    entries = f"040000 tree {stamp.tree}\tworktree\n"
    if stamp.index:
        entries += f"100644 blob {stamp.index}\tindex\n"
    top = git_bytes(repo, "mktree", input=entries.encode()).decode().strip()
    ns = time.time_ns()  # one reading names it and dates it: names sort as the times do
    when = clock.from_epoch(ns // 1_000_000_000)
    meta = {"at": clock.stamp(when), "reason": reason, "skipped": stamp.skipped, **details}
    head = repo.head()
    meta["head"] = head
    message = json.dumps(meta, sort_keys=True, ensure_ascii=True)
    commit = git_bytes(repo, "commit-tree", top, "-m", message, overlay=_IDENTITY).decode().strip()
    ref = f"{ref_prefix(repo)}{clock.compact(when)}-{ns % 1_000_000_000:09d}"
    git_bytes(repo, "update-ref", ref, commit)
    return ref


@dataclass(frozen=True)
class Checkpoint:
    ref: str
    commit: str
    at: str
    meta: dict[str, object]

    @property
    def name(self) -> str:
        return self.ref.rsplit("/", 1)[-1]


def listed(repo: Repo) -> list[Checkpoint]:
    """Every checkpoint, newest first."""
    fmt = "%(refname)%00%(objectname)%00%(contents)%00%00"
    out = git_bytes(
        repo, "for-each-ref", "--sort=-refname", f"--format={fmt}", ref_prefix(repo)
    ).decode("utf-8", "replace")
    found = []
    for record in out.split("\0\0\n"):
        parts = record.split("\0")
        if len(parts) < 3 or not parts[0].startswith("refs/"):
            continue
        try:
            meta = json.loads(parts[2])
        except ValueError:
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        found.append(Checkpoint(parts[0], parts[1], str(meta.get("at", "")), meta))
    return found


def prune_old(repo: Repo, now: float | None = None) -> list[str]:
    """Drop checkpoints past the bound (module docstring); returns the refs dropped."""
    from plan_build.core import clock

    moment = time.time() if now is None else now
    drop = []
    for i, cp in enumerate(listed(repo)):
        if i < KEEP_ALWAYS:
            continue
        when = clock.parse(cp.at)
        old = when is not None and moment - when.timestamp() > MAX_AGE_DAYS * 86400
        if i >= MAX_COUNT or old:
            drop.append(cp.ref)
    if drop:
        git_bytes(
            repo, "update-ref", "--stdin", input="".join(f"delete {r}\n" for r in drop).encode()
        )
    return drop


def calls(repo: Repo) -> list[dict[str, object]]:
    """The hook's call log, oldest first (lines that do not parse are skipped)."""
    try:
        raw = (state_dir(repo) / CALL_LOG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in raw.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def last_taken(repo: Repo) -> str | None:
    """When the newest checkpoint was taken (RFC 3339), or None."""
    found = listed(repo)
    return found[0].at if found else None


__all__ = [
    "KEEP_ALWAYS",
    "MAX_AGE_DAYS",
    "MAX_COUNT",
    "MAX_FILE",
    "REF_PREFIX",
    "Checkpoint",
    "Taken",
    "calls",
    "last_taken",
    "listed",
    "locked",
    "prune_old",
    "take",
]
