"""The diff between two trees, read from git once per pair and kept (issue 36, ADR 0200).

`status`, `verify`, `report` and `commit` each ask for the same list: every file that differs
between the session's baseline tree and the work tree's tree, with its line counts. Trees are
named by their content, so for one pair the answer never changes; on a 5,000-file change git
takes about three `git status` to give it (it reads and diffs 10,000 blobs). The answer is kept
under the state directory, as git printed it, and read back instead.

What else decides git's answer is in the key: the attributes files outside the tree (which can
mark a file binary) and the git executable, by stat. A kept answer is a hint, never a need:
anything unreadable, damaged or of another key is asked of git again. The state directory is
out of the agents' reach (the sandbox policy, ADR 0190), so no agent can plant an answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from plan_build.core import fsutil
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo

KEEP = 8  # answers kept (the newest); each is the size of git's output
MAX_BYTES = 64 * 1024 * 1024  # a larger answer is not kept
MAGIC = b"plan-build treediff 1 "
_TREE = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def home(repo: Repo) -> Path:
    return repo.state_dir / "cache" / "treediff"


def key(repo: Repo) -> bytes:
    """What besides the two trees can change git's answer, by stat, as a short hex digest."""
    env = repo.env or {}
    user_home = Path(env.get("HOME") or Path.home())
    xdg = Path(env.get("XDG_CONFIG_HOME") or user_home / ".config") / "git"
    files = [
        repo.common_dir / "info" / "attributes",
        xdg / "attributes",
        Path(shutil.which("git", path=env.get("PATH")) or "git"),
    ]
    parts = []
    for path in files:
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}:-")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32].encode()


def read(repo: Repo, old: str, new: str, ask: Callable[[], bytes]) -> bytes:
    """git's answer for the pair (`ask()` when none is kept or it cannot be trusted)."""
    if not (_TREE.fullmatch(old) and _TREE.fullmatch(new)):
        return ask()
    header = MAGIC + key(repo) + b" "
    try:
        path = repo.in_state(home(repo) / f"{old}-{new}")
        data = path.read_bytes()
    except (OSError, PlanBuildError):  # none kept, or a path leading out of the git dir
        data = b""
    if data.startswith(header):
        size, _, body = data[len(header) :].partition(b"\n")
        if size.isdigit() and int(size) == len(body):  # whole, as it was written
            return body
    answer = ask()
    if len(answer) <= MAX_BYTES:
        with contextlib.suppress(OSError, PlanBuildError):  # not kept: asked again next time
            _keep(repo, f"{old}-{new}", header + b"%d\n" % len(answer) + answer)
    return answer


def _keep(repo: Repo, name: str, data: bytes) -> None:
    directory = repo.in_state(home(repo))
    fsutil.atomic_write(directory / name, data, mode=0o600)
    kept = sorted(
        (p for p in directory.iterdir() if not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime_ns,
        reverse=True,
    )
    for old in kept[KEEP:]:
        old.unlink(missing_ok=True)


__all__ = ["KEEP", "home", "key", "read"]
