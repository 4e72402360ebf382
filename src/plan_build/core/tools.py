"""The one way plan-build asks an installed tool about itself (`--version`, `--help`).

Preflight, `env`, `setup`, `review.doctor`, the CodeRabbit reviewer and the Auggie checks all
want the same facts: where the executable is, whether it runs, and what version it says it is.
`version()` answers with a typed `Answer` (resolved path, raw first line, parsed version), and
each caller words its own report from it; nobody re-parses display text.

`claude --version` and `codex --version` each start a node wrapper and a native binary: on a
2-core machine they cost preflight a large share of its time, at every launch, for an answer
that changes only when the tool is reinstalled. So a successful answer is cached by what the
executable is on disk: the resolved path, size and mtime (ADR 0120); an update (npm
reinstall, a new symlink target) misses the cache. Only version lines are kept, never plugin
or login state. The file lives in the XDG cache directory and is safe to delete; an
unreadable, oversized or malformed one is ignored.

Every run goes through `proc.run` with the caller's timeout and `cancel`: a timeout or a
missing program is an `Answer` with its `problem`, a cancel raises proc.CommandCancelled.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_build.core import fsutil, proc
from plan_build.core.checks import Check
from plan_build.core.errors import PlanBuildError

FILENAME = "tool-versions.json"
MAX_BYTES = 64 * 1024
MAX_ENTRIES = 32
_lock = threading.Lock()  # preflight's probes run in threads
_VERSION = re.compile(r"\d+(?:\.\d+)+")

# Why a tool gave no answer: not on PATH; did not answer within the timeout; could not be
# started (e.g. not executable; `error` says what).
Problem = Literal["missing", "timeout", "error"]


@dataclass(frozen=True)
class Answer:
    """What one tool said when asked (or what the cache remembers it said)."""

    name: str
    path: str | None  # the resolved executable; None: not on PATH
    returncode: int | None = None  # None: it did not run to an exit (see problem)
    stdout: str = ""
    stderr: str = ""
    problem: Problem | None = None
    error: PlanBuildError | None = None  # for problem "error"
    cached: bool = False  # answered from the version cache, nothing ran

    @property
    def ok(self) -> bool:
        return self.problem is None and self.returncode == 0

    @property
    def text(self) -> str:
        return self.stdout + self.stderr

    @property
    def line(self) -> str:
        """The raw first line of the answer (stdout, or stderr when stdout is empty)."""
        lines = (self.stdout.strip() or self.stderr.strip()).splitlines()
        return lines[0] if lines else ""

    @property
    def version(self) -> str | None:
        """`2.1.332` from `2.1.332 (Claude Code)`, `0.171.0` from `codex-cli 0.171.0`; None
        when the tool failed or its first line holds no dotted number."""
        m = _VERSION.search(self.line) if self.ok else None
        return m.group(0) if m else None

    @property
    def numbers(self) -> tuple[int, ...] | None:
        """The version as numbers, for comparisons such as `>= (0, 4)`."""
        v = self.version
        return tuple(int(part) for part in v.split(".")) if v else None


def ask(
    name: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout: float,
    cancel: threading.Event | None = None,
) -> Answer:
    """Run `name args` once, by name as the exec resolves it on PATH (no cache)."""
    return _run(
        name, proc.which(name, env), [name, *args], env=env, cwd=cwd, timeout=timeout, cancel=cancel
    )


def version(
    name: str,
    *,
    env: Mapping[str, str],
    home: Path,
    cwd: Path | None = None,
    timeout: float,
    cancel: threading.Event | None = None,
) -> Answer:
    """`<path> --version` for the executable PATH resolves `name` to, from the cache when this
    exact executable answered before. Not on PATH: `missing`, and nothing is started."""
    path = proc.which(name, env)
    if path is None:
        return Answer(name, None, problem="missing")
    line = lookup(env, home, path)
    if line is not None:
        return Answer(name, path, 0, line + "\n", cached=True)
    answer = _run(name, path, [path, "--version"], env=env, cwd=cwd, timeout=timeout, cancel=cancel)
    if answer.ok and answer.line:
        store(env, home, path, answer.line)
    return answer


def _run(
    name: str,
    path: str | None,
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    timeout: float,
    cancel: threading.Event | None,
) -> Answer:
    try:
        r = proc.run(argv, cwd=cwd, env=env, timeout=timeout, cancel=cancel)
    except proc.CommandNotFound:
        return Answer(name, None, problem="missing")
    except proc.CommandTimeout:
        return Answer(name, path, problem="timeout")
    except proc.CommandCancelled:
        raise
    except PlanBuildError as exc:
        return Answer(name, path, problem="error", error=exc)
    return Answer(name, path, r.returncode, r.stdout, r.stderr)


def versions(
    names: Iterable[str],
    *,
    env: Mapping[str, str],
    home: Path,
    cwd: Path | None = None,
    timeout: float,
) -> dict[str, Answer]:
    """Several tools' versions at once (each launch is mostly waiting), by name."""
    names = list(names)
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        found = pool.map(lambda n: version(n, env=env, home=home, cwd=cwd, timeout=timeout), names)
        return dict(zip(names, found, strict=True))


def unanswered(check_id: str, a: Answer, *, timeout: float, install: str | None) -> Check | None:
    """The failing row for a tool that gave no answer: not on PATH, silent for `timeout`
    seconds, or not startable. None when it ran to an exit, which each caller words itself."""
    if a.path is None:
        return Check(check_id, "fail", f"{a.name} is not on PATH", install)
    if a.problem == "timeout":
        return Check(
            check_id,
            "fail",
            f"{a.name} --version did not answer in {timeout:g}s",
            f"run `{a.name} --version` yourself to see what it waits for",
        )
    if a.error is not None:
        detail = f"{a.name} at {a.path} cannot run: {a.error.what}"
        return Check(check_id, "fail", detail, a.error.fix)
    return None


# --- the version cache ------------------------------------------------------------------------


def cache_file(env: Mapping[str, str], home: Path) -> Path:
    base = env.get("XDG_CACHE_HOME") or str(home / ".cache")
    return Path(base) / "plan-build" / FILENAME


def key(executable: str) -> str | None:
    """path, size and mtime of what `executable` resolves to (None: cannot be read)."""
    try:
        real = os.path.realpath(executable)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return f"{real}\0{st.st_size}\0{st.st_mtime_ns}"


def _read(path: Path) -> dict[str, str]:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            return {}
        loaded = json.loads(data)
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, str)}


def lookup(env: Mapping[str, str], home: Path, executable: str) -> str | None:
    """The version line cached for this exact executable, if any."""
    k = key(executable)
    if k is None:
        return None
    with _lock:
        return _read(cache_file(env, home)).get(k)


def store(env: Mapping[str, str], home: Path, executable: str, line: str) -> None:
    """Remember a successful `--version` answer (best effort: a cache that cannot be written
    only means the next run asks the tool again)."""
    k = key(executable)
    if k is None or len(line) > 200 or "\0" in line:
        return
    path = cache_file(env, home)
    with _lock:
        entries = _read(path)
        entries.pop(k, None)
        entries[k] = line
        kept = dict(list(entries.items())[-MAX_ENTRIES:])
        with contextlib.suppress(OSError):
            fsutil.atomic_write(path, json.dumps(kept, indent=0) + "\n")


__all__ = [
    "FILENAME",
    "MAX_BYTES",
    "Answer",
    "Problem",
    "ask",
    "cache_file",
    "key",
    "lookup",
    "store",
    "unanswered",
    "version",
    "versions",
]
