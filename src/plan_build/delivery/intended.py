"""The intended change: the current work tree minus the session baseline.

Everything here reads git objects (trees and blobs), never the work tree directly, so the
change that is shown, verified and committed is one fixed set of bytes. Paths travel as
bytes through git (`-z`, no quoting) and as `os.fsdecode` strings in Python, so names with
spaces, newlines or non-UTF-8 bytes survive the round trip.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plan_build.core import proc
from plan_build.core.gitrepo import Repo, git_argv, git_env
from plan_build.delivery import statusindex, treediff
from plan_build.delivery.baseline import Baseline

# Diffs are read with fixed options so a user's diff config (noprefix, external tools,
# textconv, colour, relative paths) cannot change what plan-build parses.
DIFF_OPTS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


def git_bytes(
    repo: Repo, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
) -> bytes:
    """Run git in the work tree and return its exact stdout bytes (raises on failure)."""
    return proc.run_bytes(
        git_argv(["-c", "core.quotePath=false", *args]),
        cwd=repo.root,
        env=git_env(env),
        input=input,
        check=True,
        timeout=600,
    ).stdout


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
# a control character or a byte that was not UTF-8 (a surrogate escape): one regex search per
# path, not a Python test per character (a 5,000-file change's status spent 0.05 s there)
_NEEDS_ESCAPE = re.compile("[\x00-\x1f\x7f\udc80-\udcff]")


def display_path(path: str) -> str:
    """A path as a user can read it on one line: control characters and bad bytes escaped,
    and then the whole name quoted (as git quotes such names)."""
    if not _NEEDS_ESCAPE.search(path):
        return path
    out = []
    for ch in path:
        code = ord(ch)
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 32 or code == 127:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class Entry:
    """One tree entry: its mode (as git writes it) and object id."""

    mode: str
    oid: str

    @property
    def kind(self) -> str:
        return _KINDS.get(self.mode, "other")


_KINDS = {
    "100644": "file",
    "100755": "file",
    "120000": "symlink",
    "160000": "gitlink",
    "040000": "tree",
}


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # A added, M modified, D deleted, T type changed
    old: Entry | None
    new: Entry | None
    added: int | None = None  # None for binary files
    deleted: int | None = None

    @property
    def binary(self) -> bool:
        return self.added is None

    def as_json(self) -> dict[str, Any]:
        return {
            "path": path_json(self.path),
            "status": self.status,
            "added": self.added,
            "deleted": self.deleted,
            "binary": self.binary,
            "old_mode": self.old.mode if self.old else None,
            "new_mode": self.new.mode if self.new else None,
        }


def path_json(path: str) -> str:
    """A path for JSON output: the real name when it is valid UTF-8, else an escaped form."""
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return display_path(path)
    return path


@dataclass(frozen=True)
class Change:
    """The session's intended change: baseline work tree -> current work tree."""

    baseline: Baseline
    tree: str  # the current whole work tree
    files: tuple[FileChange, ...]

    @property
    def empty(self) -> bool:
        return not self.files

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def deleted(self) -> int:
        return sum(f.deleted or 0 for f in self.files)

    def summary(self) -> str:
        if self.empty:
            return "no intended change"
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''}, +{self.added} −{self.deleted}"

    def as_json(self) -> dict[str, Any]:
        return {
            "baseline_tree": self.baseline.worktree_tree,
            "tree": self.tree,
            "head": self.baseline.head,
            "files": len(self.files),
            "added": self.added,
            "deleted": self.deleted,
        }


def raw_diff(repo: Repo, old: str, new: str) -> dict[str, tuple[Entry | None, Entry | None]]:
    """Every path that differs between two trees, with its old and new entry (None: absent)."""
    return _parse_diff(git_bytes(repo, "diff-tree", *_RAW, old, new))[0]


def numstat(repo: Repo, old: str, new: str) -> dict[str, tuple[int | None, int | None]]:
    """Lines added and deleted per path (None, None for binary files)."""
    out = git_bytes(repo, "diff-tree", "-r", "-z", "--numstat", "--no-renames", old, new)
    return _parse_diff(out)[1]


_RAW = ("-r", "-z", "--raw", "--no-renames", "--abbrev=40")
Counts = dict[str, tuple[int | None, int | None]]


def _parse_diff(out: bytes) -> tuple[dict[str, tuple[Entry | None, Entry | None]], Counts]:
    """`diff-tree -z` output with `--raw` records (":modes oids status", then the path) and/or
    `--numstat` records ("added<TAB>deleted<TAB>path"; "-" for binary), in one pass."""
    fields = out.split(b"\0")
    entries: dict[str, tuple[Entry | None, Entry | None]] = {}
    counts: Counts = {}
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if rec.startswith(b":") and i < len(fields):
            old_mode, new_mode, old_oid, new_oid, _status = rec[1:].decode("ascii").split(" ")
            entries[os.fsdecode(fields[i])] = (
                None if set(old_mode) == {"0"} else Entry(old_mode, old_oid),
                None if set(new_mode) == {"0"} else Entry(new_mode, new_oid),
            )
            i += 1
            continue
        parts = rec.split(b"\t", 2)
        if len(parts) == 3:
            a, d, path = parts
            counts[os.fsdecode(path)] = (
                None if a == b"-" else int(a),
                None if d == b"-" else int(d),
            )
    return entries, counts


def _status(old: Entry | None, new: Entry | None) -> str:
    if old is None:
        return "A"
    if new is None:
        return "D"
    if old.kind != new.kind:
        return "T"
    return "M"


def compute(repo: Repo, base: Baseline, *, tree: str | None = None, counts: bool = True) -> Change:
    """The intended change now (or against `tree`, an already taken snapshot). Now is taken
    through the session's kept index (`statusindex`): the same tree, re-hashing less."""
    current = tree or statusindex.tree(repo, base)
    if counts:
        files = files_between(repo, base.worktree_tree, current)
    else:
        raw = raw_diff(repo, base.worktree_tree, current)
        files = tuple(FileChange(p, _status(o, n), o, n, 0, 0) for p, (o, n) in raw.items())
    return Change(baseline=base, tree=current, files=files)


def files_between(repo: Repo, old: str, new: str) -> tuple[FileChange, ...]:
    """Every file that differs between two trees, with its line counts (one walk of both,
    once per pair: `treediff` keeps git's answer)."""
    out = treediff.read(
        repo, old, new, lambda: git_bytes(repo, "diff-tree", *_RAW, "--numstat", old, new)
    )
    raw, stats = _parse_diff(out)
    return tuple(
        FileChange(path, _status(o, n), o, n, *stats.get(path, (0, 0)))
        for path, (o, n) in raw.items()
    )


# --- added lines ------------------------------------------------------------------------

_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_OCTAL = re.compile(rb"[0-7]{3}")
_ESCAPES = {
    ord("a"): 7,
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("v"): 11,
    ord("f"): 12,
    ord("r"): 13,
    ord('"'): 34,
    ord("\\"): 92,
}


def unquote_path(raw: bytes) -> bytes:
    """Undo git's C-style quoting of a path in diff headers ("a\\tb", "\\303\\251")."""
    if not (raw.startswith(b'"') and raw.endswith(b'"') and len(raw) >= 2):
        return raw
    body = raw[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == 92 and i + 1 < len(body):  # backslash
            nxt = body[i + 1]
            if _OCTAL.fullmatch(body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return bytes(out)


def parse_added(diff: bytes) -> dict[str, list[tuple[int, str]]]:
    """Added lines per path, with their line numbers in the new file, from a -U0 patch.

    Lines are counted by the hunk headers, so an added line that itself looks like a
    header (`+++ x`, `@@ ...`) is still read as content.
    """
    added: dict[str, list[tuple[int, str]]] = {}
    path: str | None = None
    plus = minus = 0
    line_no = 0
    for raw in diff.split(b"\n"):
        if plus or minus:
            if raw.startswith(b"+") and plus:
                if path is not None:
                    text = raw[1:].decode("utf-8", "replace")
                    added.setdefault(path, []).append((line_no, text))
                line_no += 1
                plus -= 1
            elif raw.startswith(b"-") and minus:
                minus -= 1
            continue
        if raw.startswith(b"diff --git "):
            path = None
        elif raw.startswith(b"+++ "):
            target = unquote_path(raw[4:].rstrip(b"\t"))
            path = None if target == b"/dev/null" else os.fsdecode(target.removeprefix(b"b/"))
        elif raw.startswith(b"@@ "):
            m = _HUNK.match(raw)
            if m:
                minus = int(m.group(1)) if m.group(1) is not None else 1
                line_no = int(m.group(2))
                plus = int(m.group(3)) if m.group(3) is not None else 1
    return added


def added_lines(repo: Repo, old: str, new: str) -> dict[str, list[tuple[int, str]]]:
    """The lines the change adds, per path, binary files included: `--text` (with
    `--no-textconv`) means no attribute (`binary`, `-diff`, a diff driver) and no
    `core.bigFileThreshold` can hide a file's content from the checks that read it."""
    diff = git_bytes(repo, "diff", "-U0", "--text", *DIFF_OPTS, old, new)
    return parse_added(diff)


# --- reading objects --------------------------------------------------------------------


def read_objects(repo: Repo, specs: Sequence[str]) -> list[bytes | None]:
    """Contents of objects (ids or `tree:path`), None for missing ones, in one git call."""
    askable = [s for s in specs if "\n" not in s]  # the batch protocol is line-based
    if len(askable) < len(specs):
        answers = iter(read_objects(repo, askable))
        return [None if "\n" in s else next(answers) for s in specs]
    if not specs:
        return []
    data = git_bytes(
        repo, "cat-file", "--batch", input=b"".join(os.fsencode(s) + b"\n" for s in specs)
    )
    out: list[bytes | None] = []
    pos = 0
    for _ in specs:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split(b" ")
        pos = nl + 1
        if len(header) < 3 or header[-1] == b"missing" or not header[-1].isdigit():
            out.append(None)
            continue
        size = int(header[2])
        out.append(data[pos : pos + size])
        pos += size + 1
    return out


def tree_paths(repo: Repo, tree: str) -> set[str]:
    """Every file and directory path in a tree."""
    out = git_bytes(repo, "ls-tree", "-r", "-t", "-z", "--name-only", tree)
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def write_blob(repo: Repo, data: bytes) -> str:
    return git_bytes(repo, "hash-object", "-w", "--stdin", input=data).decode("ascii").strip()


def is_binary(data: bytes) -> bool:
    """git's own rule: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def index_info(entries: Iterable[tuple[str, Entry | None]]) -> bytes:
    """`git update-index -z --index-info` input: removals first, then additions."""
    zero = "0" * 40
    entries = list(entries)
    removals = [f"0 {zero}\t".encode() + os.fsencode(p) + b"\0" for p, e in entries if e is None]
    adds = [
        f"{e.mode} {e.oid}\t".encode() + os.fsencode(p) + b"\0" for p, e in entries if e is not None
    ]
    return b"".join(removals + adds)


__all__ = [
    "Change",
    "Entry",
    "FileChange",
    "added_lines",
    "compute",
    "display_path",
    "files_between",
    "git_bytes",
    "index_info",
    "numstat",
    "parse_added",
    "path_json",
    "raw_diff",
    "read_objects",
    "tree_paths",
    "unquote_path",
]
