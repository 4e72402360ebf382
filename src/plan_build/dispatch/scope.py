"""Allowed-scope patterns of a task: repository-relative paths and globs.

`*` and `?` stay within one path segment, `**` spans any number of segments, `[abc]` is a
character class. A pattern that matches a directory covers everything inside it, so
`src/audit`, `src/audit/` and `src/audit/**` all allow `src/audit/page.py`.

Names compare as the repository's file system does (`NameRules`, from git's core.ignorecase
and core.precomposeunicode): on macOS `src/Audit/` allows `src/audit/page.py`, and a scope
typed in NFC allows the NFD name Finder made. On Linux they compare byte for byte.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from plan_build.core.fsutil import BYTEWISE, NameRules


def problem(pattern: str) -> str | None:
    """Why `pattern` cannot be a scope entry, or None when it can."""
    if not pattern.strip():
        return "empty scope entry"
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", pattern):
        return f"scope entry {pattern!r} is absolute; write it relative to the repository root"
    if "\\" in pattern:
        return f"scope entry {pattern!r} uses backslashes; use / between directories"
    parts = _normalise(pattern).split("/")
    if ".." in parts:
        return f"scope entry {pattern!r} leaves the repository (..)"
    if parts[0] == ".git" or pattern.strip("/") in {"", "."}:
        return f"scope entry {pattern!r} would allow the whole repository or .git"
    if pattern.strip() in {"*", "**", "**/*"}:
        return f"scope entry {pattern!r} would allow the whole repository"
    if "[" in pattern:  # only a character class can make the expression invalid
        try:
            _compile(pattern)
        except re.error as exc:
            return f"scope entry {pattern!r} is not a valid glob ({exc})"
    return None


def _normalise(pattern: str) -> str:
    p = pattern.strip()
    while p.startswith("./"):
        p = p[2:]
    if p.endswith("/"):
        p = p.rstrip("/")
    return p


def _segment(seg: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(seg):
        ch = seg[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = seg.find("]", i + 2 if seg[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = seg[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _compile(pattern: str) -> re.Pattern[str]:
    parts = _normalise(pattern).split("/")
    rx = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            rx += ".*" if last else "(?:[^/]+/)*"
        else:
            rx += _segment(part) + ("" if last else "/")
    # a pattern that names a directory covers everything below it
    return re.compile(f"^{rx}(?:/.*)?$", re.DOTALL)


@dataclass(frozen=True)
class Scope:
    patterns: tuple[str, ...]
    names: NameRules = BYTEWISE
    _compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = tuple(_compile(self.names.key(p)) for p in self.patterns)
        object.__setattr__(self, "_compiled", compiled)

    def allows(self, path: str) -> bool:
        key = self.names.key(path)
        return any(rx.match(key) for rx in self._compiled)

    def outside(self, paths: Iterable[str]) -> list[str]:
        """The paths this scope does not allow, in the order given."""
        return [p for p in paths if not self.allows(p)]

    def unmatched(self, files: Sequence[str]) -> list[str]:
        """Patterns that match none of `files` (typos, or files the task will create)."""
        return [
            p
            for p, rx in zip(self.patterns, self._compiled, strict=True)
            if not any(rx.match(self.names.key(f)) for f in files)
        ]


# By-products of running a task's own checks (Python caches). A change under them is listed,
# never a scope violation: Codex running the verification itself must not block the task.
DEFAULT_BYPRODUCTS: tuple[str, ...] = (
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
)


@dataclass(frozen=True)
class Byproducts:
    """gitignore-like globs: `name/` matches a directory of that name at any depth, a pattern
    without `/` matches any path segment, one with `/` inside is anchored at the root (scope
    syntax)."""

    patterns: tuple[str, ...] = DEFAULT_BYPRODUCTS
    names: NameRules = BYTEWISE
    _anchored: Scope = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        anchored = tuple(p.strip("/") for p in self.patterns if "/" in p.strip("/"))
        object.__setattr__(self, "_anchored", Scope(anchored, self.names))

    def matches(self, path: str) -> bool:
        if self._anchored.patterns and self._anchored.allows(path):
            return True
        parts = self.names.key(path).split("/")
        for pattern in self.patterns:
            core = self.names.key(pattern.strip("/"))
            if "/" in core:
                continue
            if any(fnmatch.fnmatchcase(seg, core) for seg in parts):
                return True
        return False


def byproduct_problem(pattern: str) -> str | None:
    """Why a `dispatch.byproducts` entry cannot be used, or None."""
    core = pattern.strip().strip("/")
    if not core or core in ("*", "**", "."):
        return "would make every path a by-product"
    if pattern.startswith("/") or ".." in core.split("/") or core.split("/")[0] == ".git":
        return "must be a relative glob inside the repository"
    return None
