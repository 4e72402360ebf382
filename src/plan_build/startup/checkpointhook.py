"""The `checkpoint` hook: before every Claude tool call that can write (Bash, Edit, Write,
MultiEdit, NotebookEdit), the work tree and the user's index are checkpointed if they changed
(core/checkpoint.py). Claude runs hooks as its own processes, outside the agent's sandbox, so
this can write the repository's objects and plan-build's refs, which no agent process can.

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
import time
from pathlib import Path

BLOCK = 2
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


def _log(folder: Path, tool: object, what: str, ref: str | None, new: bool) -> None:
    from plan_build.core import fsutil
    from plan_build.core.checkpoint import CALL_LOG

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
