"""The `checkpoint` hook: before every Claude tool call that can write (Bash, Edit, Write,
MultiEdit, NotebookEdit), the work tree and the user's index are checkpointed if they changed
(core/checkpoint.py). Claude runs hooks as its own processes, outside the agent's sandbox, so
this can write the repository's objects and plan-build's refs, which no agent process can.

An unchanged small tree is answered by a quick look (`unchanged`: the stamp, the index's
stat, one walk of ctimes) before git's machinery is imported; everything else goes to
core/checkpoint.py's full check.

Fail closed: a checkpoint that cannot be taken refuses the tool call (exit 2 with the reason,
which Claude shows the model), because a write after a missing checkpoint is exactly the write
that could lose work with nothing to restore (docs/adr/0198). Each call is also noted in the
checkpoints' call log (the tool and what it names, credential-looking values masked), so
`plan-build checkpoints` can say which call followed each checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from pathlib import Path

BLOCK = 2
CALL_LOG = "calls.jsonl"  # core/checkpoint.py's CALL_LOG (a test keeps them equal)
STATE = ("plan-build", "checkpoints")
TOOL_STATE = (".claude/codex-review",)  # core/checkpoint.py's TOOL_STATE (the same test)
MOUNT_POINTS = frozenset(  # core/checkpoint.py's MOUNT_POINTS (the same test)
    (
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
    )
)
FAST_LIMIT = 5000  # recorded files: past this, `find` beats a walk in Python
LOG_LIMIT = 1024 * 1024  # bytes; past it the older half is dropped
WHAT_LIMIT = 300
# a light mask for the log (the full redaction runs when `checkpoints` shows it)
SECRETISH = re.compile(
    r"(?i)((?:token|secret|password|passwd|api[_-]?key|authorization)[\"']?\s*[:=]?\s*"
    r"(?:bearer\s+)?)[^\s\"']+"
)


def summary(tool_input: dict[str, object]) -> str:
    """What the call names: a Bash command (one line, bounded), or a file tool's path."""
    for key in ("command", "file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str):
            text = " ".join(value.split())
            text = SECRETISH.sub(lambda m: m.group(1) + "***", text)
            return text[:WHAT_LIMIT] + ("…" if len(text) > WHAT_LIMIT else "")
    return ""


def run(data: dict[str, object]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) for one `checkpoint` hook call."""
    tool = data.get("tool_name") if isinstance(data.get("tool_name"), str) else "a tool"
    tool_input = data.get("tool_input") if isinstance(data.get("tool_input"), dict) else {}
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    what = summary(tool_input)  # type: ignore[arg-type]
    root = str(os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd())
    try:
        last = unchanged(Path(root))
        if last is not None:  # the common case, answered without git or the process seam
            _log(Path(root) / ".git" / Path(*STATE), tool, what, last, False)
            return 0, "", ""
    except (OSError, ValueError, TypeError, KeyError):
        pass  # the full check below decides
    try:
        from plan_build.core import checkpoint, gitrepo

        root = str(os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd())
        repo = gitrepo.discover(Path(root))
        taken = checkpoint.take(repo, f"before {tool}", details={"tool": tool, "what": what})
        _log(checkpoint.state_dir(repo), tool, what, taken.ref, taken.new)
    except Exception as exc:  # every failure refuses: see the module docstring
        reason = getattr(exc, "what", None) or type(exc).__name__
        return (
            BLOCK,
            "",
            f"plan-build could not checkpoint the work tree before this {tool} call ({reason}), "
            "so the call is refused: without a checkpoint, work it destroyed could not be "
            "restored. Tell the user; they can run `plan-build status` outside Claude Code.",
        )
    return 0, "", ""


def unchanged(root: Path) -> str | None:
    """The newest checkpoint's ref when nothing changed since it, decided from its stamp,
    the index's stat and one walk of ctimes (core/checkpoint.py's own test, in a small
    repository's main work tree, without importing git's machinery: that import alone costs
    more than the walk); None when a change or anything unusual needs the full check."""
    git_dir = root / ".git"
    stamp = json.loads((git_dir / Path(*STATE) / "stamp.json").read_text(encoding="utf-8"))
    if not git_dir.is_dir() or not stamp.get("last_ref"):
        return None
    if (stamp["tree"], stamp["index"]) != (stamp["last_tree"], stamp["last_index"]):
        return None
    if int(stamp.get("extra", {}).get("count", FAST_LIMIT)) >= FAST_LIMIT:
        return None
    for path, recorded in (
        (git_dir / "index", "index_stat"),
        (git_dir / "info" / "exclude", "ignore_stat"),
    ):
        try:
            st = path.stat()
            now = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        except FileNotFoundError:
            now = [0, 0, 0, 0]
        if now != stamp[recorded]:
            return None
    since = int(stamp["taken_ns"])
    prune = {".git", *TOOL_STATE, *stamp["prune"]}
    pending = [""]
    while pending:
        rel = pending.pop()
        here = root / rel if rel else root
        if os.lstat(here).st_ctime_ns > since and (rel or not _same_top(root, stamp, prune)):
            return None
        with os.scandir(here) as entries:
            for entry in entries:
                child = f"{rel}/{entry.name}" if rel else entry.name
                if child in prune or (child in MOUNT_POINTS and _empty_file(entry)):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(child)
                elif entry.stat(follow_symlinks=False).st_ctime_ns > since:
                    return None
    return str(stamp["last_ref"])


def _same_top(root: Path, stamp: dict[str, object], prune: set[str]) -> bool:
    """Whether the top directory holds the recorded names (its ctime moves each time Claude's
    sandbox adds and removes its mount points there); ignored names send it to the full check."""
    extra = stamp.get("extra")
    if not isinstance(extra, dict) or extra.get("top_of") != stamp["tree"]:
        return False
    names = set()
    for entry in os.scandir(root):
        if entry.name in prune or (entry.name in MOUNT_POINTS and _empty_file(entry)):
            continue
        names.add(entry.name)
    return names == set(extra.get("top", ()))


def _empty_file(entry: os.DirEntry[str]) -> bool:
    st = entry.stat(follow_symlinks=False)
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def _log(folder: Path, tool: object, what: str, ref: str | None, new: bool) -> None:
    from plan_build.core import fsutil

    path = folder / CALL_LOG
    line = json.dumps(
        {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tool": tool,
            "what": what,
            "checkpoint": (ref or "").rsplit("/", 1)[-1],
            "new": new,
        },
        ensure_ascii=True,
        sort_keys=True,
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > LOG_LIMIT:
        lines = path.read_bytes().splitlines(keepends=True)
        fsutil.atomic_write(path, b"".join(lines[len(lines) // 2 :]))
