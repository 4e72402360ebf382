"""Live scope in architect mode: Claude hears at once when it writes outside the current task.

Claude Code runs this through the PostToolUse hooks (startup/gatehook.py): `post-edit` on its
file tools (the path the tool wrote), `post-bash` on Bash (the paths the command names as
written: redirections, `tee`, `cp`/`mv`/`install`/`ln` destinations, `sed -i`, `touch`, `rm`,
`truncate`, `dd of=`, also inside `bash -c` strings). Reading the command, not the work tree,
keeps each call inside its 50 ms budget: a git status would cost the hook ~30 ms of imports
alone. A command that writes through a program of its own is not seen here; `verify` still
checks the whole intended change. The write has happened; the answer is Claude's documented
way to feed a message back (`decision: "block"` with a reason, which Claude shows the model,
and the same text as `additionalContext`). Allowed without a word: the architect records
(SPEC.md, TASKS.md, ADR.md, CHANGELOG.md, the archive) and the scope of every task that is
In Progress, matched by the same rules dispatch checks Codex's attempts with
(dispatch/scope.py). Anything else joins the session's intended change, which `verify` and
`commit` would take, without a task behind it.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plan_build.dispatch.scope import Scope

# architectrecords.RECORDS and its archive folder (a test keeps them equal): importing that
# module would cost every hook call ~10 ms of datetime and shutil
RECORDS = ("SPEC.md", "TASKS.md", "ADR.md", "CHANGELOG.md")
RECORD_DIRS = ("docs/archive/",)


def after_write(path: str | None, cwd: str | None, opts: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) for the hook: 0 and nothing when the write is in scope."""
    if opts.get("mode") != "architect" or path is None:
        return 0, "", ""
    root = os.path.realpath(os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd())
    full = os.path.realpath(os.path.join(cwd or root, path))
    rel = os.path.relpath(full, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        return tell(f"{path} is outside the repository ({root}); plan-build's session is there")
    rel = rel.replace(os.sep, "/")
    if rel in RECORDS or rel.startswith(RECORD_DIRS):
        return 0, "", ""
    tasks, problem = in_progress(root, opts.get("state"))
    if problem is not None:
        return tell(f"{rel} was written, and plan-build could not check its scope: {problem}")
    if any(scope.allows(rel) for _, scope in tasks):
        return 0, "", ""
    if not tasks:
        where = "no task in TASKS.md is In Progress"
    else:
        where = "it is outside the scope of " + ", ".join(t for t, _ in tasks)
    return tell(
        f"{rel} is outside the current task's scope ({where}), so it joins the session's "
        "intended change without a task: verify and commit would take it. In architect mode "
        "code changes go through `plan-build dispatch TASK-…` (Codex); revert this write, or "
        "add the path to the scope of the task it belongs to."
    )


def after_bash(command: str | None, cwd: str | None, opts: dict[str, str]) -> tuple[int, str, str]:
    """The live-scope answer for a Bash command that ran: its written paths, judged."""
    if opts.get("mode") != "architect" or not command:
        return 0, "", ""
    for path in write_targets(command):
        answer = after_write(path, cwd, opts)
        if answer[1]:
            return answer
    return 0, "", ""


WRITERS_LAST = frozenset({"cp", "mv", "install", "ln"})  # the last argument is written
WRITERS_ALL = frozenset({"tee", "touch", "rm", "truncate", "mkdir", "rmdir", "shred"})


def write_targets(command: str, depth: int = 0) -> list[str]:
    """The paths `command` names as written, in order (a best reading: what it cannot split
    it leaves to verify)."""
    from plan_build.startup import shellgate

    tokens = shellgate.split(command)
    if tokens is None or depth > 3:
        return []
    found: list[str] = []
    words: list[str] = []
    for i, tok in enumerate([*tokens, ";"]):
        previous = tokens[i - 1] if i else ""
        if previous in (">", ">>", "&>", "&>>", ">|"):
            found.append(tok)
            continue
        if tok in shellgate.REDIRECTS or (tok.isdigit() and tokens[i + 1 : i + 2] == [">"]):
            continue
        if tok not in shellgate.OPERATORS:
            words.append(tok)
            continue
        found += _written_by(words, depth)
        words = []
    return [p for p in found if p and not p.startswith(("/dev/", "/proc/", "$", "-"))]


def _written_by(words: list[str], depth: int) -> list[str]:
    if not words:
        return []
    from plan_build.startup import shellgate

    name = shellgate.program_name(words[0])
    args = [w for w in words[1:] if not w.startswith("-")]
    nested = [p for w in words if shellgate.META.search(w) for p in write_targets(w, depth + 1)]
    if name in WRITERS_LAST and len(args) >= 2:
        return [args[-1], *nested]
    if name in WRITERS_ALL:
        return [*args, *nested]
    if name == "sed" and any(w.startswith(("-i", "--in-place")) for w in words):
        return [*args[1:], *nested]
    if name == "dd":
        return [w[3:] for w in words if w.startswith("of=")] + nested
    return nested


def in_progress(root: str, state: str | None = None) -> tuple[list[tuple[str, Scope]], str | None]:
    """(task id, Scope) for every In Progress task, or the reason TASKS.md cannot say. The
    scopes are kept in `<state>/claude/scopes.json` under TASKS.md's stat, so a call while
    TASKS.md stands still skips its parser (~15 ms of imports)."""
    from plan_build.dispatch.scope import Scope

    path = os.path.join(root, "TASKS.md")
    try:
        st = os.stat(path)
        key = [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]
    except OSError:
        key = None
    cache = os.path.join(state, "claude", "scopes.json") if state else None
    kept = _cached(cache, key)
    if kept is None:
        kept, problem = _parsed(root)
        if problem is not None:
            return [], problem
        _keep(cache, key, kept)
    return [(task_id, Scope(tuple(patterns))) for task_id, patterns in kept], None


def _cached(cache: str | None, key: list[int] | None) -> list[tuple[str, list[str]]] | None:
    if cache is None or key is None:
        return None
    try:
        with open(cache, encoding="utf-8") as fh:
            value = json.load(fh)
        if value["key"] == key:
            return [(str(t), [str(p) for p in ps]) for t, ps in value["tasks"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _keep(cache: str | None, key: list[int] | None, tasks: list[tuple[str, list[str]]]) -> None:
    """Best effort: a cache that cannot be written is only a slower next call."""
    if cache is None or key is None:
        return
    tmp = f"{cache}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"key": key, "tasks": tasks}, fh)
        os.replace(tmp, cache)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _parsed(root: str) -> tuple[list[tuple[str, list[str]]], str | None]:
    from pathlib import Path

    from plan_build.core.errors import PlanBuildError
    from plan_build.dispatch import taskfile
    from plan_build.dispatch.taskmodel import FILENAME, IN_PROGRESS

    try:
        parsed = taskfile.read(Path(root) / FILENAME)
    except PlanBuildError as exc:
        return [], exc.what
    return [(t.id, list(t.scope)) for t in parsed.tasks if t.status == IN_PROGRESS], None


def tell(message: str) -> tuple[int, str, str]:
    text = f"plan-build (live scope): {message}"
    answer = {
        "decision": "block",
        "reason": text,
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text},
    }
    return 0, json.dumps(answer), ""
