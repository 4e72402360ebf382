"""Each tool's `--version` answer, cached by what the executable is on disk.

`claude --version` and `codex --version` each start a node wrapper and a native binary: on a
2-core machine they cost preflight a large share of its time, at every launch, for an answer
that changes only when the tool is reinstalled. The key is the resolved executable's path,
size and mtime, so an update (npm reinstall, a new symlink target) misses the cache. Only
version lines are kept, never plugin or login state. The file lives in the XDG cache
directory and is safe to delete; an unreadable, oversized or malformed one is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from plan_build import fsutil

FILENAME = "tool-versions.json"
MAX_BYTES = 64 * 1024
MAX_ENTRIES = 32
_lock = threading.Lock()  # preflight's probes run in threads


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
    only means the next preflight asks the tool again)."""
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


__all__ = ["FILENAME", "cache_file", "key", "lookup", "store"]
